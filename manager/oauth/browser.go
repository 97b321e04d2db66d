package oauth

import (
	"context"
	"os/exec"
	"time"
)

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
