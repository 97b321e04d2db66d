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
	prefix    map[string]string           // each server's prefix on /mcp
	down      map[string]bool             // servers whose items are not offered (see offered)
	rules     map[string]expose.Rules     // each server's, as declared
	ttl       map[string]manager.CacheTTL // the time to live each server gave its lists
	own       *nameSet                    // toolNames and promptAs, both ways
	other     map[int]*nameSet            // names under other budgets clients are given, by budget
}

// nameSet is the names of tools and prompts under one budget, both ways.
type nameSet struct {
	tools, prompts     map[itemKey]string
	toolKey, promptKey map[string]itemKey
}

func newNameSet(tools, prompts map[itemKey]string) *nameSet {
	ns := &nameSet{tools: maps.Clone(tools), prompts: maps.Clone(prompts),
		toolKey: make(map[string]itemKey, len(tools)), promptKey: make(map[string]itemKey, len(prompts))}
	for k, name := range tools {
		ns.toolKey[name] = k
	}
	for k, name := range prompts {
		ns.promptKey[name] = k
	}
	return ns
}

// offered reports whether the items of a server in state st are offered
// to clients. A server that stays down until someone acts (disabled,
// failed for good, waiting for a login) or is on its way out offers
// nothing: a model shown its tools would call them in vain. One that is
// only between attempts keeps its last known items, whose calls say when
// the next attempt is.
func offered(st manager.State) bool {
	switch st {
	case manager.StateDisabled, manager.StateFailed, manager.StateUnauthorized,
		manager.StateClosing, manager.StateRemoved:
		return false
	}
	return true
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

// namers keep /mcp names stable from one view to the next, under the
// gateway's budget and under each other budget a client was given.
type namers struct {
	tools, prompts *namer
	other          map[int]*namers // by budget; theirs is nil
}

func newNamers(budget int) *namers {
	return &namers{tools: newNamer(budget), prompts: newNamer(budget)}
}

// build reads the source and names what it offers. It returns the
// collisions resolved for the first time, for the caller to announce.
func (n *namers) build(src Source) (*view, []collision) {
	v := &view{servers: src.Names(), prefix: map[string]string{}, down: map[string]bool{}, rules: map[string]expose.Rules{},
		ttl: map[string]manager.CacheTTL{}}
	slices.Sort(v.servers)
	rules := v.rules
	for _, s := range v.servers {
		if st, err := src.Status(s); err != nil || !offered(st.State) {
			v.down[s] = true
		} else {
			v.ttl[s] = st.CacheTTL
		}
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
	v.tools = slices.DeleteFunc(tools, func(t manager.ToolInfo) bool {
		return v.down[t.Server] || rules[t.Server].Hidden(t.Name) || t.Problem != ""
	})
	prompts, _ := src.Prompts("")
	v.prompts = slices.DeleteFunc(prompts, func(p manager.PromptInfo) bool { return v.down[p.Server] })
	resources, _ := src.Resources("")
	v.resources = slices.DeleteFunc(resources, func(r manager.ResourceInfo) bool { return v.down[r.Server] })
	sortBy(v.tools, func(t manager.ToolInfo) (string, string) { return t.Server, t.Name })
	sortBy(v.prompts, func(p manager.PromptInfo) (string, string) { return p.Server, p.Name })
	sortBy(v.resources, func(r manager.ResourceInfo) (string, string) { return r.Server, r.URI })

	toolItems := make([]naming, len(v.tools))
	for i, t := range v.tools {
		toolItems[i] = naming{key: itemKey{t.Server, t.Name}, prefix: v.prefix[t.Server], as: rules[t.Server].Rename[t.Name]}
	}
	promptItems := make([]naming, len(v.prompts))
	for i, p := range v.prompts {
		promptItems[i] = naming{key: itemKey{p.Server, p.Name}, prefix: v.prefix[p.Server]}
	}
	toolNames, collisions := n.tools.assign(toolItems)
	promptNames, more := n.prompts.assign(promptItems)
	v.own = newNameSet(toolNames, promptNames)
	v.toolNames, v.promptAs = v.own.tools, v.own.prompts
	// The same items under the budgets some clients are given instead:
	// what collides there is the same as here, announced once.
	v.other = make(map[int]*nameSet, len(n.other))
	for budget, o := range n.other {
		toolNames, _ := o.tools.assign(toolItems)
		promptNames, _ := o.prompts.assign(promptItems)
		v.other[budget] = newNameSet(toolNames, promptNames)
	}
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
