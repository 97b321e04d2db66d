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
// client uses them. Definitions are counted once and remembered, so
// asking again (a dashboard's refresh) is cheap.
func (g *Gateway) ModeCosts() []ModeCost {
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
	return ModeCost{Endpoint: path, Tools: len(tools),
		Direct: g.costs.Tools(direct), Search: g.costs.Tools(search),
		Code: g.costs.Tool(RunLuaTool(g.opts.MetaPrefix, servers))}
}
