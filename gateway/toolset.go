package gateway

import (
	"fmt"
	"path"
	"slices"

	"github.com/mcpvisor/mcpvisor/manager"
)

// Toolset is a named subset of the tools on /mcp, served at
// /toolsets/NAME/mcp under the same names. Patterns follow path.Match and
// are matched against "server.tool" (the name Lua uses): "git.*",
// "fs.read_*".
type Toolset struct {
	// Include selects tools; if empty, every tool.
	Include []string
	// Exclude removes tools Include selected.
	Exclude []string
	// Filter, if set, decides instead of the patterns, for all the tools
	// of a relisting at once (one answer per tool, in order). It runs on
	// the gateway's own goroutine: it must answer promptly and never wait
	// on the gateway.
	Filter func([]manager.ToolInfo) []bool
	// Version changes whenever Filter's meaning does (patterns compare
	// by value; a function cannot).
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
	if ts.Filter != nil {
		keep := ts.Filter(tools)
		if len(keep) != len(tools) {
			return make([]bool, len(tools))
		}
		return keep
	}
	keep := make([]bool, len(tools))
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
		(a.Filter == nil) == (b.Filter == nil) && a.Version == b.Version
}
