package oauth

import (
	"context"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/browser"
)

// browserGrace is how long a browser command is given to fail before the
// next is tried; one that keeps running is taken to have opened the page.
const browserGrace = 3 * time.Second

// opener runs the browser commands of one login.
type opener struct {
	running []*browser.Process
}

// open tries the commands in turn until one starts and either exits
// successfully or keeps running for browserGrace. It reports whether any
// did. target must be an http or https URL; nothing else is opened.
func (o *opener) open(ctx context.Context, target string, cmds [][]string) bool {
	if browser.CheckURL(target) != nil {
		return false
	}
	for _, argv := range cmds {
		p, err := browser.Start(argv)
		if err != nil {
			continue
		}
		o.running = append(o.running, p)
		t := time.NewTimer(browserGrace)
		select {
		case <-p.Done():
			t.Stop()
			if p.Err() != nil {
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

// wait gives the commands still running a moment to end (xdg-open and
// the like hand the page to the browser and exit). A browser that keeps
// running is the user's: it is not stopped, and the browser package
// reaps it when it exits, after the login.
func (o *opener) wait() {
	t := time.NewTimer(2 * time.Second)
	defer t.Stop()
	for _, p := range o.running {
		select {
		case <-p.Done():
		case <-t.C:
			return
		}
	}
}
