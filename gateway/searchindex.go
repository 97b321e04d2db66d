package gateway

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
)

// searchIndex is the endpoint's tool index, made (by the run goroutine,
// from the tools the endpoint lists) the first time a client needs it:
// an endpoint whose clients are all in direct mode never pays for one.
// It is nil only once the gateway is closed.
func (ep *endpoint) searchIndex() *toolsearch.Index {
	if x := ep.searchable.Load(); x != nil {
		return x
	}
	_ = ep.g.do(func() {
		if ep.index == nil {
			ep.index = toolsearch.New()
			ep.syncIndex(ep.g.currentView())
		}
	})
	return ep.searchable.Load()
}

// syncIndex makes the index hold the tools the endpoint lists, with the
// user's tags and aliases; only the tools that changed are analysed
// again. Only the run goroutine calls it.
func (ep *endpoint) syncIndex(v *view) {
	entries := make([]toolsearch.Entry, 0, len(ep.tools))
	for _, name := range slices.Sorted(maps.Keys(ep.tools)) {
		r := ep.tools[name]
		entries = append(entries, toolsearch.EntryOf(r.server, name, r.from, v.rules[r.server].Words(r.tool)))
	}
	if err := ep.index.Sync(entries); err != nil {
		// Names are unique on an endpoint; this would be a bug.
		ep.g.log.Warn("tool search index not updated", "endpoint", ep.path, "error", err)
	}
	ep.searchable.Store(ep.index)
}

// servers are the servers whose tools the endpoint lists, sorted.
func (rt *routeTable) servers() []string {
	seen := map[string]bool{}
	for _, r := range rt.tools {
		seen[r.server] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// whyText says in a few words where a match's query words were found:
// "sum in description; integer in params (prefix)".
func whyText(hits []toolsearch.Hit) string {
	parts := make([]string, 0, len(hits))
	for _, h := range hits {
		p := h.Word + " in " + strings.Join(h.Fields, "/")
		if h.Prefix {
			p += " (prefix)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// matchLine is one search result as a model reads it.
func matchLine(name, server, desc, why string) string {
	line := fmt.Sprintf("%s (%s)", name, server)
	if desc != "" {
		line += ": " + desc
	}
	if why != "" {
		line += " [matched " + why + "]"
	}
	return line
}
