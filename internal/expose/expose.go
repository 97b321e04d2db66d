package expose

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
)

// Rules say how a server's tools are offered to MCP clients by the gateway.
type Rules struct {
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
	// Pin lists patterns of the server's own tool names that stay listed
	// directly for clients offered the search meta-tools instead of the
	// catalogue.
	Pin []string
	// Describe maps a tool's own name to the description offered instead
	// of the server's.
	Describe map[string]string
	// Tags and Aliases map a tool's own name to the user's words for it,
	// which tool search matches as strongly as the tool's name.
	Tags    map[string][]string
	Aliases map[string][]string
}

// Rune reports whether r may appear in a tool name every MCP client
// accepts: a-z A-Z 0-9 _ -.
func Rune(r rune) bool {
	return r < 0x80 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
}

// ValidName reports whether s is a tool name every MCP client accepts: 1
// to 64 of the Rune characters.
func ValidName(s string) bool {
	return s != "" && len(s) <= 64 && !strings.ContainsFunc(s, func(r rune) bool { return !Rune(r) })
}

// Hidden reports whether the tool named tool is hidden.
func (e Rules) Hidden(tool string) bool {
	return slices.ContainsFunc(e.Hide, func(p string) bool {
		ok, _ := path.Match(p, tool)
		return ok
	})
}

// Pinned reports whether the tool named tool is pinned.
func (e Rules) Pinned(tool string) bool {
	return slices.ContainsFunc(e.Pin, func(p string) bool {
		ok, _ := path.Match(p, tool)
		return ok
	})
}

// Words are the user's tags and aliases of the tool named tool, tags
// first.
func (e Rules) Words(tool string) []string {
	tags, aliases := e.Tags[tool], e.Aliases[tool]
	if len(tags)+len(aliases) == 0 {
		return nil
	}
	return slices.Concat(tags, aliases)
}

// Problem is what is wrong with one field of Rules.
type Problem struct {
	Field string // as declared: "expose.prefix"
	Msg   string
}

// Problems lists what is wrong with e, in field order; none for usable
// Rules.
func (e Rules) Problems() []Problem {
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if e.Prefix != "" && (!ValidName(e.Prefix) || len(e.Prefix) > 32) {
		add("expose.prefix", "must be 1 to 32 of the characters a-z A-Z 0-9 _ -, got %q", e.Prefix)
	}
	for i, h := range e.Hide {
		if _, err := path.Match(h, ""); err != nil || strings.TrimSpace(h) == "" {
			add("expose.hide", "item %d: %q is not a usable pattern (use * and ?, e.g. \"delete_*\")", i+1, h)
		}
	}
	for i, h := range e.Pin {
		if _, err := path.Match(h, ""); err != nil || strings.TrimSpace(h) == "" {
			add("expose.pin", "item %d: %q is not a usable pattern (use * and ?, e.g. \"get_*\")", i+1, h)
		}
	}
	for _, field := range []struct {
		name  string
		words map[string][]string
	}{{"expose.tags", e.Tags}, {"expose.aliases", e.Aliases}} {
		for _, tool := range slices.Sorted(maps.Keys(field.words)) {
			for i, w := range field.words[tool] {
				if strings.TrimSpace(w) == "" {
					add(field.name, "%q: item %d is empty; give words a user would search for", tool, i+1)
				}
			}
		}
	}
	for _, from := range slices.Sorted(maps.Keys(e.Rename)) {
		if to := e.Rename[from]; !ValidName(to) {
			add("expose.rename", "%q: the new name must be 1 to 64 of the characters a-z A-Z 0-9 _ -, got %q", from, to)
		}
	}
	return out
}
