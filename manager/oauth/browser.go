package oauth

import (
	"context"
	"os/exec"
	"strings"
	"time"
)

// browserCommands are the commands that may open url, in order: those of
// browserEnv ($BROWSER: a ':'-separated list of commands, where %s stands
// for the URL or, without it, the URL comes last), else xdg-open if it is
// on PATH. Each command is split into words at spaces.
func browserCommands(browserEnv, url string) [][]string {
	var cmds [][]string
	for _, entry := range strings.Split(browserEnv, ":") {
		words := strings.Fields(entry)
		if len(words) == 0 {
			continue
		}
		placed := false
		for i, w := range words {
			if strings.Contains(w, "%s") {
				words[i] = strings.ReplaceAll(w, "%s", url)
				placed = true
			}
		}
		if !placed {
			words = append(words, url)
		}
		cmds = append(cmds, words)
	}
	if len(cmds) == 0 {
		if p, err := exec.LookPath("xdg-open"); err == nil {
			cmds = append(cmds, []string{p, url})
		}
	}
	return cmds
}

// browserGrace is how long a browser command is given to fail before the
// next is tried; one that keeps running is taken to have opened the page.
const browserGrace = 3 * time.Second

// opener runs browser commands and waits for them before the login ends.
type opener struct {
	running []chan struct{} // closed when the command has been reaped
}

// open tries the commands in turn until one starts and either exits
// successfully or keeps running for browserGrace. It reports whether any
// did.
func (o *opener) open(ctx context.Context, cmds [][]string) bool {
	for _, words := range cmds {
		cmd := exec.Command(words[0], words[1:]...)
		if err := cmd.Start(); err != nil {
			continue
		}
		exited := make(chan struct{})
		var err error
		go func() {
			defer close(exited)
			err = cmd.Wait()
		}()
		o.running = append(o.running, exited)
		t := time.NewTimer(browserGrace)
		select {
		case <-exited:
			t.Stop()
			if err != nil {
				continue
			}
			return true
		case <-t.C:
			return true
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
	return false
}

// wait gives the commands still running a moment to end; a browser that
// keeps running is left to the user.
func (o *opener) wait() {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	for _, ch := range o.running {
		select {
		case <-ch:
		case <-t.C:
			return
		}
	}
}
