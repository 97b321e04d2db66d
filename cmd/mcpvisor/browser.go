package main

import (
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
)

// errNoBrowser is openURL's error when $BROWSER is not set.
var errNoBrowser = errors.New("$BROWSER is not set")

// browserCommands reads $BROWSER as xdg-open and Python's webbrowser do:
// a ':'-separated list of commands, tried in order; in each, %s stands for
// the URL, which is otherwise appended. Words are split on spaces (no
// shell is involved, so the URL is always one argument).
func browserCommands(browser, target string) [][]string {
	var cmds [][]string
	for _, entry := range strings.Split(browser, ":") {
		words := strings.Fields(entry)
		if len(words) == 0 {
			continue
		}
		placed := false
		for i, w := range words {
			if strings.Contains(w, "%s") {
				words[i] = strings.ReplaceAll(w, "%s", target)
				placed = true
			}
		}
		if !placed {
			words = append(words, target)
		}
		cmds = append(cmds, words)
	}
	return cmds
}

// openURL starts the first command of $BROWSER (browser) that can be
// started with target and returns it; only http and https URLs are opened,
// and none at all when $BROWSER is "none" (as for mcpvisor login).
// The command runs detached from the terminal, in its own process group
// (a Ctrl-C at the REPL is not for it), without our stdin or output; a
// goroutine waits for it to exit, so it is reaped.
func openURL(browser, target string) ([]string, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("only http and https URLs are opened, not %q", target)
	}
	cmds := browserCommands(browser, target)
	if len(cmds) == 0 || strings.TrimSpace(browser) == "none" {
		return nil, errNoBrowser
	}
	var errs []error
	for _, argv := range cmds {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		go func() { _ = cmd.Wait() }()
		return argv, nil
	}
	return nil, errors.Join(errs...)
}
