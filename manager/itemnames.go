package manager

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor/events"
)

// maxItemName bounds the name of a tool or prompt a server lists. The MCP
// specification says 128 characters, but real servers exceed it and the
// gateway serves such tools under a shortened name, so only what no name
// needs is refused.
const maxItemName = 1024

// refusal is an item a server listed that mcpvisor does not take: its
// name could hijack a terminal or pass for another item.
type refusal struct {
	kind, name, reason string
}

// screenNames keeps the items whose names are usable and refuses the
// others: an empty name, invalid UTF-8, a control or invisible format
// character, a name over maxItemName bytes, or a look-alike (NameKey) of
// an item listed before it. Items come sorted, so the same list always
// keeps the same ones.
func screenNames[T any](kind string, items []T, name func(T) string) ([]T, []refusal) {
	var refused []refusal
	seen := make(map[string]string, len(items))
	kept := items[:0:0]
	for _, it := range items {
		n := name(it)
		reason := ""
		switch {
		case n == "":
			reason = "its name is empty"
		case !utf8.ValidString(n):
			reason = "its name is not valid UTF-8"
		case len(n) > maxItemName:
			reason = fmt.Sprintf("its name is %d bytes, over %d", len(n), maxItemName)
		default:
			if i := strings.IndexFunc(n, invisible); i >= 0 {
				r, _ := utf8.DecodeRuneInString(n[i:])
				reason = fmt.Sprintf("its name contains the control or invisible character %U", r)
			} else if prev, dup := seen[NameKey(n)]; dup && prev != n {
				reason = fmt.Sprintf("its name looks like %q, another %s of this server", prev, kind)
			}
		}
		if reason != "" {
			refused = append(refused, refusal{kind: kind, name: n, reason: reason})
			continue
		}
		seen[NameKey(n)] = n
		kept = append(kept, it)
	}
	if len(refused) == 0 {
		return items, nil
	}
	return kept, refused
}

// publishRefused tells what a discovery refused, an event per item.
func (s *supervisor) publishRefused(c *catalog) {
	for _, r := range c.refused {
		s.m.bus.Publish(events.KindRefused, s.name, events.Fields{"item": r.kind, "name": fmt.Sprintf("%+q", r.name), "reason": r.reason})
	}
}
