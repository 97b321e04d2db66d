package luaapi_test

// mcp_client_mode and mcp_toolset's mode, over the fake gateway: what the
// gateway is handed, and what the function it is handed answers.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
)

// nextModeFor is the next mode function handed to the gateway (nil when
// it was taken away).
func (g *fakeGateway) nextModeFor(t *testing.T) func(luaapi.ModeQuery) string {
	t.Helper()
	select {
	case f := <-g.modeFor:
		return f
	case <-time.After(waitDeadline):
		t.Fatal("no mode function handed to the gateway")
		return nil
	}
}

func (g *fakeGateway) noModeFor(t *testing.T) {
	t.Helper()
	select {
	case f := <-g.modeFor:
		t.Fatalf("a mode function was handed to the gateway again (nil: %v)", f == nil)
	default:
	}
}

// The config's mcp_client_mode chooses a client's mode by what the client
// said of itself and where it connected; nil leaves the default. A reload
// without it takes it away; one set at the REPL applies at once and
// mcp_client_mode(nil) removes it.
func TestMcpClientModeChoosesByClient(t *testing.T) {
	g := newGatewayRuntime(t)
	require.NoError(t, g.load(t, `
		mcp_client_mode(function(client)
			if client.name == "cursor" then return "search" end
			if client.toolset == "dev" and client.version == "2.1" and client.endpoint == "/toolsets/dev/mcp" then
				return "CODE"
			end
			if client.default == "search" then return "direct" end
		end)`))
	f := g.gw.nextModeFor(t)
	require.NotNil(t, f)
	require.Equal(t, "search", f(luaapi.ModeQuery{Client: "cursor", Version: "1.0", Endpoint: "/mcp", Default: "direct"}))
	require.Equal(t, "", f(luaapi.ModeQuery{Client: "claude-code", Endpoint: "/mcp", Default: "direct"}), "nil: the default")
	require.Equal(t, "code", f(luaapi.ModeQuery{Client: "x", Version: "2.1", Endpoint: "/toolsets/dev/mcp", Toolset: "dev", Default: "direct"}))
	require.Equal(t, "direct", f(luaapi.ModeQuery{Client: "x", Endpoint: "/mcp", Default: "search"}))

	require.NoError(t, g.load(t, `mcp_client_mode(function() return "code" end)`))
	g.gw.noModeFor(t) // the gateway's function asks whichever Lua function is in force
	require.Equal(t, "code", f(luaapi.ModeQuery{Client: "cursor", Endpoint: "/mcp", Default: "direct"}))

	require.NoError(t, g.load(t, `-- no mode function`))
	require.Nil(t, g.gw.nextModeFor(t), "a reload without it takes it away")

	g.run(t, `mcp_client_mode(function(c) return c.name == "mine" and "search" or nil end)`)
	f = g.gw.nextModeFor(t)
	require.Equal(t, "search", f(luaapi.ModeQuery{Client: "mine", Endpoint: "/mcp", Default: "direct"}))
	require.NoError(t, g.load(t, `-- still none`))
	g.gw.noModeFor(t) // the REPL's stays
	g.run(t, `mcp_client_mode(nil)`)
	require.Nil(t, g.gw.nextModeFor(t))

	for _, tc := range []struct{ src, want string }{
		{`mcp_client_mode("search")`, "function(client) expected"},
		{`mcp_client_mode(nil)`, "a config drops it by no longer setting it"},
		{"mcp_client_mode(function() end)\nmcp_client_mode(function() end)", "mcp_client_mode is set twice in startup.lua (first at startup.lua:1)"},
	} {
		require.ErrorContains(t, g.load(t, tc.src), tc.want, tc.src)
	}
	g.gw.noModeFor(t)
}

// A mode function that fails, answers what is not a mode, never ends or
// waits past ModeTimeout leaves the client its default mode, and a
// hook_error says why; the next client is asked again.
func TestMcpClientModeThatFailsLeavesTheDefault(t *testing.T) {
	g := newGatewayRuntime(t)
	w := watchBus(t, g.m.Bus())
	require.NoError(t, g.load(t, `
		mcp_client_mode(function(client)
			if client.name == "raises" then error("no such client") end
			if client.name == "lazy" then return "lazy" end
			if client.name == "number" then return 3 end
			if client.name == "spins" then while true do end end
			if client.name == "sleeps" then sleep(10) end
			return "search"
		end)`))
	f := g.gw.nextModeFor(t)
	for _, tc := range []struct{ client, want string }{
		{"raises", "no such client"},
		{"lazy", `it returned mode "lazy": unknown; the modes are direct, search and code`},
		{"number", "got number"},
		{"spins", "budget"},
		{"sleeps", "no answer within 1s; the client gets its default mode"},
	} {
		require.Equal(t, "", f(luaapi.ModeQuery{Client: tc.client, Endpoint: "/mcp", Default: "direct"}), tc.client)
		e := w.next(t, "hook_error of "+tc.client, func(e events.Event) bool {
			return e.Kind == events.KindHookError && e.Text("client") == tc.client
		})
		require.Contains(t, e.Text("error"), tc.want, tc.client)
		require.Contains(t, e.Text("hook"), "mcp_client_mode", tc.client)
	}
	require.Equal(t, "search", f(luaapi.ModeQuery{Client: "well", Endpoint: "/mcp", Default: "direct"}))
}

// mcp_toolset's mode reaches the gateway with the toolset, and a change of
// mode alone is a new snapshot.
func TestMcpToolsetMode(t *testing.T) {
	g := newGatewayRuntime(t)
	require.NoError(t, g.load(t, `
		mcp_toolset("dev", {include = {"demo.*"}, mode = "search"})
		mcp_toolset("all", {})`))
	sets := g.gw.nextSets(t)
	require.Equal(t, "search", sets["dev"].Mode)
	require.Equal(t, "", sets["all"].Mode, "no mode: the gateway's default")

	require.NoError(t, g.load(t, `
		mcp_toolset("dev", {include = {"demo.*"}, mode = "Code"})
		mcp_toolset("all", {})`))
	sets = g.gw.nextSets(t)
	require.Equal(t, "code", sets["dev"].Mode)

	for _, tc := range []struct{ src, want string }{
		{`mcp_toolset("x", {mode = "lazy"})`, `toolset "x": mode "lazy": unknown; the modes are direct, search and code`},
		{`mcp_toolset("x", {mode = true})`, `toolset "x": mode must be "direct", "search" or "code", got boolean`},
	} {
		require.ErrorContains(t, g.load(t, tc.src), tc.want, tc.src)
	}
	g.gw.noSets(t)
}
