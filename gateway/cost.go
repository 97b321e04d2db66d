package gateway

import (
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
)

// ModeCost is what one endpoint's tools/list costs a model, in tokens
// (internal/tokens: o200k_base, an estimate), in each mode.
type ModeCost struct {
	// Endpoint is the path: "/mcp", "/toolsets/NAME/mcp",
	// "/servers/NAME/mcp".
	Endpoint string
	// Tools is how many tools the endpoint serves.
	Tools int
	// Mode is the mode a client of the endpoint gets unless the mode
	// function (Options.ModeFor) chooses another: the toolset's, else the
	// gateway's.
	Mode Mode
	// Direct, Search and Code are the tokens of the list a client in
	// each mode is given.
	Direct, Search, Code int
}

// Of is the cost of mode m.
func (c ModeCost) Of(m Mode) int {
	switch m {
	case ModeSearch:
		return c.Search
	case ModeCode:
		return c.Code
	}
	return c.Direct
}

// ModeCosts is the cost of /mcp, of each toolset's endpoint and of each
// server's, in that order, as the servers are now, whether or not a
// client uses them, the servers' events and the toolsets handed over
// before the call included. Definitions are counted once and remembered,
// so asking again (a dashboard's refresh) is cheap; the counting is done
// on the caller's goroutine, which must not be the gateway's.
func (g *Gateway) ModeCosts() []ModeCost {
	_ = g.do(func() {}) // takes what the bus and SetToolsets left
	v := g.currentView()
	out := []ModeCost{g.modeCost(v, everything, "", "/mcp")}
	for _, name := range slices.Sorted(maps.Keys(*g.toolsets.Load())) {
		out = append(out, g.modeCost(v, oneToolset, name, "/toolsets/"+name+"/mcp"))
	}
	for _, s := range v.servers {
		out = append(out, g.modeCost(v, oneServer, s, "/servers/"+s+"/mcp"))
	}
	return out
}

// modeCost counts the lists an endpoint of sel and name would give.
func (g *Gateway) modeCost(v *view, sel selection, name, path string) ModeCost {
	tools, pinned := g.exposedTools(v, sel, name)
	seen := map[string]bool{}
	var direct, pins []*mcp.Tool
	for _, exposed := range slices.Sorted(maps.Keys(tools)) {
		r := tools[exposed]
		seen[r.server] = true
		def := *r.from
		def.Name = exposed
		def.InputSchema = objectSchema(def.InputSchema)
		direct = append(direct, &def)
		if pinned[exposed] {
			pins = append(pins, &def)
		}
	}
	if sel == everything && g.opts.StatusTool {
		st := statusToolDef()
		direct = append(direct, st)
		pins = append(pins, st)
	}
	servers := slices.Sorted(maps.Keys(seen))
	search := append(toolsearch.MetaTools(g.opts.MetaPrefix, servers), pins...)
	return ModeCost{Endpoint: path, Tools: len(tools), Mode: g.defaultMode(sel, name),
		Direct: g.costs.Tools(direct), Search: g.costs.Tools(search),
		Code: g.costs.Tool(RunLuaTool(g.opts.MetaPrefix, servers))}
}

// defaultMode is the mode of a client of the endpoint of sel and name
// when no mode function chooses: the toolset's, if it has one the gateway
// can serve (code mode without a runner is search, as pickMode has it),
// else the gateway's. Unlike pickMode it logs nothing: it is asked for
// figures, not for a client.
func (g *Gateway) defaultMode(sel selection, name string) Mode {
	if sel != oneToolset {
		return g.opts.Mode
	}
	ts := g.toolset(name)
	if ts == nil || ts.Mode == "" {
		return g.opts.Mode
	}
	m, err := ParseMode(string(ts.Mode))
	switch {
	case err != nil:
		return g.opts.Mode
	case m == ModeCode && g.opts.Code == nil:
		return ModeSearch
	}
	return m
}
