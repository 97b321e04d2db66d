package gateway

import (
	"fmt"
	"path"
	"slices"

	"github.com/mcpvisor/mcpvisor/manager"
)

// Toolset is a named subset of the tools on /mcp, served at
// /toolsets/NAME/mcp under the same names. It is a snapshot: the gateway
// decides from it alone, on its own goroutine, and never calls out.
//
// Patterns follow path.Match and are matched against "server.tool" (the
// name Lua uses): "git.*", "fs.read_*". A toolset decided elsewhere (a Lua
// function, run by its owner whenever the tools change) is handed over
// resolved instead: the names of the tools it holds.
type Toolset struct {
	// Include selects tools; if empty, every tool.
	Include []string
	// Exclude removes tools Include selected.
	Exclude []string
	// Resolved, if set, makes the toolset exactly the tools named in
	// Tools ("server.tool"), and the patterns are ignored. A tool listed
	// after the snapshot was made is not in it until the next snapshot.
	Resolved bool
	Tools    []string
	// Mode, if set, is how the toolset's endpoint offers its tools to a
	// client (unless Options.ModeFor chooses otherwise).
	Mode Mode
	// Version orders the snapshots of a toolset: SetToolsets ignores one
	// older than the snapshot in force, so that the gateway never goes
	// back to an earlier answer.
	Version uint64
}

// CheckPattern reports a pattern path.Match cannot use.
func CheckPattern(p string) error {
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("bad pattern %q: %v", p, err)
	}
	return nil
}

// selected returns which of tools the toolset includes.
func (ts *Toolset) selected(tools []manager.ToolInfo) []bool {
	keep := make([]bool, len(tools))
	if ts.Resolved {
		chosen := make(map[string]bool, len(ts.Tools))
		for _, name := range ts.Tools {
			chosen[name] = true
		}
		for i, t := range tools {
			keep[i] = chosen[t.Server+"."+t.Name]
		}
		return keep
	}
	for i, t := range tools {
		keep[i] = ts.includes(t)
	}
	return keep
}

func (ts *Toolset) includes(t manager.ToolInfo) bool {
	full := t.Server + "." + t.Name
	match := func(p string) bool {
		ok, _ := path.Match(p, full)
		return ok
	}
	if len(ts.Include) > 0 && !slices.ContainsFunc(ts.Include, match) {
		return false
	}
	return !slices.ContainsFunc(ts.Exclude, match)
}

func sameToolset(a, b Toolset) bool {
	return slices.Equal(a.Include, b.Include) && slices.Equal(a.Exclude, b.Exclude) &&
		a.Resolved == b.Resolved && slices.Equal(a.Tools, b.Tools) && a.Version == b.Version && a.Mode == b.Mode
}
