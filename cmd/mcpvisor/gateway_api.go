package main

import (
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/luaapi"
)

// gatewayAPI is the host's gateway as the Lua runtime sees it (mcp_serve,
// mcp_toolset, mcp_name_budget, mcp_client_mode, mcp_clients): luaapi and
// gateway know nothing of each other, and this translates between their
// types.
type gatewayAPI struct{ g *gatewayHost }

var _ luaapi.Gateway = gatewayAPI{}

// Start makes the gateway now, so that servers added next declare what
// its clients can answer.
func (a gatewayAPI) Start() { a.g.get() }

// ServeHTTP listens on addr with the token of tokenFile (else
// $MCPVISOR_TOKEN), or stops listening for "".
func (a gatewayAPI) ServeHTTP(addr, tokenFile string) error {
	if addr == "" {
		return a.g.serveHTTP("", "")
	}
	token, err := readToken(tokenFile, "token_file")
	if err != nil {
		return err
	}
	return a.g.serveHTTP(addr, token)
}

// SetToolsets hands the toolsets to the gateway (made now if need be, so
// that `serve --toolset` finds them); it does not wait.
func (a gatewayAPI) SetToolsets(sets map[string]luaapi.Toolset) {
	out := make(map[string]gateway.Toolset, len(sets))
	for name, ts := range sets {
		out[name] = gateway.Toolset{Include: ts.Include, Exclude: ts.Exclude,
			Resolved: ts.Resolved, Tools: ts.Tools, Version: ts.Version, Mode: gateway.Mode(ts.Mode)}
	}
	a.g.get().SetToolsets(out)
	a.g.h.hud.endpointsChanged()
}

// Clients lists the gateway's clients; none if it was never started.
func (a gatewayAPI) Clients() []luaapi.Client {
	gw := a.g.peek()
	if gw == nil {
		return nil
	}
	var out []luaapi.Client
	for _, c := range gw.Clients() {
		out = append(out, luaapi.Client{ID: c.ID, Name: c.Name, Version: c.Version,
			Transport: c.Transport, Endpoint: c.Endpoint, Since: c.Since})
	}
	return out
}

// SetNameBudgets hands the per-client name budgets to the gateway (made
// now if need be, so that its first clients are given them).
func (a gatewayAPI) SetNameBudgets(rules []luaapi.NameBudget) {
	out := make([]gateway.ClientBudget, len(rules))
	for i, r := range rules {
		out[i] = gateway.ClientBudget{Client: r.Client, Budget: r.Budget}
	}
	a.g.get().SetClientBudgets(out)
}

// SetModeFor hands the gateway the function that chooses each new client
// session's mode (made now if need be, so that its first clients are
// asked), or takes it away for nil.
func (a gatewayAPI) SetModeFor(f func(luaapi.ModeQuery) string) {
	if f == nil {
		a.g.get().SetModeFor(nil)
		return
	}
	a.g.get().SetModeFor(func(q gateway.ModeQuery) gateway.Mode {
		return gateway.Mode(f(luaapi.ModeQuery{Client: q.Client, Version: q.Version,
			Endpoint: q.Endpoint, Toolset: q.Toolset, Default: string(q.Default)}))
	})
}
