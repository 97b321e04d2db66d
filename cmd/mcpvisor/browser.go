package main

import (
	"errors"
	"fmt"
	"net/url"
	"os/exec"

	"syscall"

	"github.com/mcpvisor/mcpvisor/internal/browser"
)

// errNoBrowser is openURL's error when $BROWSER is not set.
var errNoBrowser = errors.New("$BROWSER is not set")

// openURL starts the first command of $BROWSER (browserEnv) that can be
// started with target and returns it; only http and https URLs are opened,
// and none at all when $BROWSER is "none" (as for mcpvisor login).
// The command runs detached from the terminal, in its own process group
// (a Ctrl-C at the REPL is not for it), without our stdin or output; a
// goroutine waits for it to exit, so it is reaped.
func openURL(browserEnv, target string) ([]string, error) {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("only http and https URLs are opened, not %q", target)
	}
	cmds := browser.Commands(browserEnv, target, false)
	if len(cmds) == 0 {
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
