// Package browser reads $BROWSER as xdg-open and Python's webbrowser do,
// for the places mcpvisor opens a link for the person using it (a login's
// authorization page, a server's elicitation URL).
package browser

import (
	"os/exec"
	"strings"
)

// Commands are the commands that may open url, in order, from browserEnv
// (the value of $BROWSER): a ':'-separated list of commands, in each of
// which %s stands for the URL or, without it, the URL comes last. Words
// are split at spaces; no shell is involved, so the URL is always one
// argument. "none" opens nothing. With fallback, xdg-open (if it is on
// PATH) is the command when $BROWSER names none.
func Commands(browserEnv, url string, fallback bool) [][]string {
	if strings.TrimSpace(browserEnv) == "none" {
		return nil
	}
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
	if len(cmds) == 0 && fallback {
		if p, err := exec.LookPath("xdg-open"); err == nil {
			cmds = append(cmds, []string{p, url})
		}
	}
	return cmds
}
