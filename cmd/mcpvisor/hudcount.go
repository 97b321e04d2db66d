package main

import (
	"strings"

	"github.com/mcpvisor/mcpvisor/events/hud"
	"github.com/mcpvisor/mcpvisor/internal/tokens"
	"github.com/mcpvisor/mcpvisor/manager"
)

// The HUD's token figures are counted off its drawing goroutine, by the
// counter goroutine below: what each server's tool definitions cost
// (hudOptions.Costs) and what each endpoint of the gateway lists
// (hudOptions.Endpoints). A count may be slow (the first loads the
// vocabulary; the gateway's waits for its own goroutine), and a frame
// never waits for one.

// tokenCount is what hudOptions.Costs said of a server.
type tokenCount struct {
	server string
	tokens int
}

// counter is the goroutine that counts tokens, so that a slow count never
// holds up a frame; without hudOptions.Costs and Endpoints it returns at
// once.
func (d *hudDisplay) counter() {
	defer close(d.counterDone)
	if d.opts.Costs == nil && d.opts.Endpoints == nil {
		return
	}
	var recount chan struct{} // d.recount when there is something to ask
	if d.opts.Endpoints != nil {
		recount = d.recount
	}
	for {
		select {
		case <-d.stop:
			return
		case server := <-d.count:
			c := tokenCount{server, d.opts.Costs(server)}
			select {
			case d.counted <- c:
			case <-d.stop:
				return
			}
		case <-recount:
			eps := d.opts.Endpoints()
			select {
			case d.endpoints <- eps:
			case <-d.stop:
				return
			}
		}
	}
}

// endpointsChanged asks for the gateway's endpoints to be counted again
// (the gateway started or stopped listening, its toolsets changed); it
// returns at once, from any goroutine, and is nil-safe.
func (d *hudDisplay) endpointsChanged() {
	if d == nil {
		return
	}
	select {
	case d.recount <- struct{}{}:
	default: // already asked: the count to come reads the latest
	}
}

// gatewayEndpoints says what /mcp and each toolset's endpoint of the
// host's gateway cost a model in their modes, or nil when the gateway
// serves no one here (it is not listening: a toolset declared at the REPL
// makes a gateway, but no client can reach it). It never makes one. Each
// server's own endpoint is left out: its row says what its tools cost.
func gatewayEndpoints(g *gatewayHost) func() []hud.Endpoint {
	return func() []hud.Endpoint {
		gw := g.peek()
		if gw == nil || g.address() == "" {
			return nil
		}
		var out []hud.Endpoint
		for _, c := range gw.ModeCosts() {
			path, ok := shownEndpoint(c.Endpoint)
			if !ok {
				continue
			}
			out = append(out, hud.Endpoint{Path: path, Mode: string(c.Mode), Tokens: c.Of(c.Mode)})
		}
		return out
	}
}

// shownEndpoint is how the HUD names an endpoint ("/mcp",
// "/toolsets/dev"), and false for a server's own.
func shownEndpoint(path string) (string, bool) {
	if rest, ok := strings.CutPrefix(path, "/toolsets/"); ok {
		return "/toolsets/" + strings.TrimSuffix(rest, "/mcp"), true
	}
	return path, path == "/mcp"
}

// toolCosts counts what the definitions of a server's tools cost a model
// in tokens, remembering each definition's count.
func toolCosts(mgr *manager.Manager) func(server string) int {
	var cache tokens.Cache
	return func(server string) int {
		tools, err := mgr.Tools(server)
		if err != nil {
			return 0
		}
		n := 0
		for _, t := range tools {
			if t.Tool != nil {
				n += cache.Tool(t.Tool)
			}
		}
		return n
	}
}
