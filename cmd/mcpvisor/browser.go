package main

import (
	"errors"

	"github.com/mcpvisor/mcpvisor/internal/browser"
)

// errNoBrowser is openURL's error when $BROWSER is not set.
var errNoBrowser = errors.New("$BROWSER is not set")

// openURL starts the first command of $BROWSER (browserEnv) that can be
// started with target and returns it; only http and https URLs are opened,
// and none at all when $BROWSER is "none" (as for mcpvisor login).
// The command runs as browser.Start runs it: in its own process group (a
// Ctrl-C at the REPL is not for it), without our stdin or output, reaped
// when it exits.
func openURL(browserEnv, target string) ([]string, error) {
	if err := browser.CheckURL(target); err != nil {
		return nil, err
	}
	cmds := browser.Commands(browserEnv, target, false)
	if len(cmds) == 0 {
		return nil, errNoBrowser
	}
	var errs []error
	for _, argv := range cmds {
		if _, err := browser.Start(argv); err != nil {
			errs = append(errs, err)
			continue
		}
		return argv, nil
	}
	return nil, errors.Join(errs...)
}
