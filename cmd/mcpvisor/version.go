package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// printVersion is `mcpvisor --version`: the module version and, when the
// binary was built from a checkout, the commit it was built from. A binary
// built by `go run` or a test may carry no VCS stamp; what there is is
// printed, and what is missing is said.
func printVersion(w io.Writer) {
	fmt.Fprintln(w, versionLine(debug.ReadBuildInfo()))
}

// versionLine renders build info as one line, e.g.
// "mcpvisor v0.3.0 (commit 1a2b3c4d5e6f, 2026-11-24T21:05:34Z, modified) go1.26.8".
func versionLine(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "mcpvisor (no build information)"
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var vcs []string
	if rev := settings["vcs.revision"]; rev != "" {
		vcs = append(vcs, "commit "+rev[:min(len(rev), 12)])
		if t := settings["vcs.time"]; t != "" {
			vcs = append(vcs, t)
		}
		if settings["vcs.modified"] == "true" {
			vcs = append(vcs, "modified")
		}
	} else {
		vcs = append(vcs, "no VCS revision recorded")
	}
	return fmt.Sprintf("mcpvisor %s (%s) %s", version, strings.Join(vcs, ", "), info.GoVersion)
}
