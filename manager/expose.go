package manager

import (
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Expose says how a server's tools are offered to MCP clients by the
// gateway (package gateway). The manager carries it with the declaration,
// validates it and compares it, and otherwise ignores it.
type Expose struct {
	// Prefix starts the server's tool and prompt names on the gateway's
	// /mcp endpoint: Prefix__tool. If "", the server's name with every
	// character outside [a-zA-Z0-9_-] replaced by "_".
	Prefix string
	// Hide lists patterns (path.Match syntax: "delete_*") of the server's
	// own tool names that the gateway does not offer at all.
	Hide []string
	// Rename maps a tool's own name to the name offered after the prefix
	// on /mcp.
	Rename map[string]string
}

// exposedName is what a prefix or a renamed tool must look like: what
// every MCP client accepts in a tool name.
var exposedName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Hidden reports whether the tool named tool is hidden.
func (e Expose) Hidden(tool string) bool {
	return slices.ContainsFunc(e.Hide, func(p string) bool {
		ok, _ := path.Match(p, tool)
		return ok
	})
}

func (e Expose) problems(p *problems) {
	if e.Prefix != "" && (!exposedName.MatchString(e.Prefix) || len(e.Prefix) > 32) {
		p.add("expose.prefix", "must be 1 to 32 of the characters a-z A-Z 0-9 _ -, got %q", e.Prefix)
	}
	for i, h := range e.Hide {
		if _, err := path.Match(h, ""); err != nil || strings.TrimSpace(h) == "" {
			p.add("expose.hide", "item %d: %q is not a usable pattern (use * and ?, e.g. \"delete_*\")", i+1, h)
		}
	}
	for _, from := range slices.Sorted(maps.Keys(e.Rename)) {
		if to := e.Rename[from]; !exposedName.MatchString(to) {
			p.add("expose.rename", "%q: the new name must be 1 to 64 of the characters a-z A-Z 0-9 _ -, got %q", from, to)
		}
	}
}
