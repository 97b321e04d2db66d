package gateway

import (
	"maps"
	"slices"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/expose"
	"github.com/mcpvisor/mcpvisor/manager"
)

// view is one consistent picture of what the servers offer, named as the
// gateway exposes it. The run goroutine builds a new one after every burst
// of changes; a view is never modified once built.
type view struct {
	servers   []string // declared, sorted
	tools     []manager.ToolInfo
	toolNames map[itemKey]string // each tool's name on /mcp
	prompts   []manager.PromptInfo
	promptAs  map[itemKey]string // each prompt's name on /mcp
	resources []manager.ResourceInfo
	prefix    map[string]string // each server's prefix on /mcp
}

// hasServer reports whether name is a declared server.
func (v *view) hasServer(name string) bool {
	_, ok := slices.BinarySearch(v.servers, name)
	return ok
}

// serverOfPrefix returns the server whose exposed prefix is p.
func (v *view) serverOfPrefix(p string) (string, bool) {
	for _, s := range v.servers {
		if v.prefix[s] == p {
			return s, true
		}
	}
	return "", false
}

// namers keep /mcp names stable from one view to the next.
type namers struct {
	tools, prompts *namer
}

// build reads the source and names what it offers. It returns the
// collisions resolved for the first time, for the caller to announce.
func (n namers) build(src Source) (*view, []collision) {
	v := &view{servers: src.Names(), prefix: map[string]string{}}
	slices.Sort(v.servers)
	rules := map[string]expose.Rules{}
	for _, s := range v.servers {
		v.prefix[s], _ = sanitize(s)
		if spec, err := src.Spec(s); err == nil {
			rules[s] = spec.Expose
			if spec.Expose.Prefix != "" {
				v.prefix[s] = spec.Expose.Prefix
			}
		}
	}
	tools, _ := src.Tools("")
	// Hidden tools are not offered, nor are tools that cannot be called
	// (a schema that cannot be used safely would be a hazard to clients
	// too); mcp_tools() still lists the latter with the reason.
	v.tools = slices.DeleteFunc(tools, func(t manager.ToolInfo) bool { return rules[t.Server].Hidden(t.Name) || t.Problem != "" })
	v.prompts, _ = src.Prompts("")
	v.resources, _ = src.Resources("")
	sortBy(v.tools, func(t manager.ToolInfo) (string, string) { return t.Server, t.Name })
	sortBy(v.prompts, func(p manager.PromptInfo) (string, string) { return p.Server, p.Name })
	sortBy(v.resources, func(r manager.ResourceInfo) (string, string) { return r.Server, r.URI })

	items := make([]naming, len(v.tools))
	for i, t := range v.tools {
		items[i] = naming{key: itemKey{t.Server, t.Name}, prefix: v.prefix[t.Server], as: rules[t.Server].Rename[t.Name]}
	}
	names, collisions := n.tools.assign(items)
	v.toolNames = maps.Clone(names)
	items = items[:0]
	for _, p := range v.prompts {
		items = append(items, naming{key: itemKey{p.Server, p.Name}, prefix: v.prefix[p.Server]})
	}
	names, more := n.prompts.assign(items)
	v.promptAs = maps.Clone(names)
	return v, append(collisions, more...)
}

func sortBy[T any](s []T, key func(T) (string, string)) {
	slices.SortStableFunc(s, func(a, b T) int {
		a1, a2 := key(a)
		b1, b2 := key(b)
		if c := strings.Compare(a1, b1); c != 0 {
			return c
		}
		return strings.Compare(a2, b2)
	})
}
