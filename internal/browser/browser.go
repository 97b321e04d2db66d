package browser

import (
	"fmt"
	"net/url"
	"os/exec"
	"strings"
)

// CheckURL returns an error unless target is an absolute http or https
// URL with a host: nothing else (file:, javascript:, a custom scheme a
// desktop would hand to some program) is ever opened.
func CheckURL(target string) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("only http and https URLs are opened, not %q", target)
	}
	return nil
}

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
