package luaapi_test

// mcp_serve, mcp_toolset and mcp_clients, over a fake gateway that records
// what the runtime asks of it.

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// fakeGateway records listener requests and the toolsets in force.
type fakeGateway struct {
	// started, when set, runs at each Start.
	started func()
	serves  chan [2]string // {addr, tokenFile} per ServeHTTP
	sets    chan map[string]luaapi.Toolset
	budgets chan []luaapi.NameBudget
	modeFor chan func(luaapi.ModeQuery) string
	clients []luaapi.Client

	mu sync.Mutex
	// mu guards failAddr and latest.
	failAddr string
	latest   map[string]luaapi.Toolset
}

func newFakeGateway() *fakeGateway {
	return &fakeGateway{serves: make(chan [2]string, 64), sets: make(chan map[string]luaapi.Toolset, 64),
		budgets: make(chan []luaapi.NameBudget, 64), modeFor: make(chan func(luaapi.ModeQuery) string, 64)}
}

func (g *fakeGateway) ServeHTTP(addr, tokenFile string) error {
	g.serves <- [2]string{addr, tokenFile}
	g.mu.Lock()
	defer g.mu.Unlock()
	if addr != "" && addr == g.failAddr {
		return errors.New("listen tcp " + addr + ": bind: address already in use")
	}
	return nil
}

func (g *fakeGateway) Start() {
	if g.started != nil {
		g.started()
	}
}

func (g *fakeGateway) SetToolsets(sets map[string]luaapi.Toolset) {
	g.mu.Lock()
	g.latest = sets
	g.mu.Unlock()
	g.sets <- sets
}

func (g *fakeGateway) Clients() []luaapi.Client { return g.clients }

func (g *fakeGateway) SetNameBudgets(rules []luaapi.NameBudget) { g.budgets <- rules }

func (g *fakeGateway) SetModeFor(f func(luaapi.ModeQuery) string) { g.modeFor <- f }

// nextBudgets is the next set of name budget rules given to the gateway.
func (g *fakeGateway) nextBudgets(t *testing.T) []luaapi.NameBudget {
	t.Helper()
	select {
	case b := <-g.budgets:
		return b
	case <-time.After(waitDeadline):
		t.Fatal("no name budgets given to the gateway")
		return nil
	}
}

func (g *fakeGateway) failOn(addr string) {
	g.mu.Lock()
	g.failAddr = addr
	g.mu.Unlock()
}

// nextServe is the next listener request.
func (g *fakeGateway) nextServe(t *testing.T) [2]string {
	t.Helper()
	select {
	case s := <-g.serves:
		return s
	case <-time.After(waitDeadline):
		t.Fatal("no listener request")
		return [2]string{}
	}
}

// noServe requires that no listener request is pending.
func (g *fakeGateway) noServe(t *testing.T) {
	t.Helper()
	select {
	case s := <-g.serves:
		t.Fatalf("unexpected listener request %q", s)
	default:
	}
}

// nextSets is the next set of toolsets handed over.
func (g *fakeGateway) nextSets(t *testing.T) map[string]luaapi.Toolset {
	t.Helper()
	select {
	case s := <-g.sets:
		return s
	case <-time.After(waitDeadline):
		t.Fatal("no toolsets handed to the gateway")
		return nil
	}
}

func (g *fakeGateway) noSets(t *testing.T) {
	t.Helper()
	select {
	case s := <-g.sets:
		t.Fatalf("unexpected toolsets %v", s)
	default:
	}
}

type gatewayRuntime struct {
	*testRuntime
	gw   *fakeGateway
	path string
}

func newGatewayRuntime(t *testing.T) *gatewayRuntime {
	return newGatewayRuntimeDial(t, nil)
}

// newGatewayRuntimeDial is newGatewayRuntime with the servers dial
// connects to (the demo server for nil).
func newGatewayRuntimeDial(t *testing.T, dial manager.DialFunc) *gatewayRuntime {
	gw := newFakeGateway()
	r := newTestRuntime(t, dial, func(o *luaapi.Options) { o.Gateway = gw })
	return &gatewayRuntime{testRuntime: r, gw: gw, path: filepath.Join(t.TempDir(), "startup.lua")}
}

func (g *gatewayRuntime) load(t *testing.T, src string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	_, err := g.LoadConfigSource(ctx, g.path, src)
	return err
}

func TestMcpServeFollowsTheConfig(t *testing.T) {
	g := newGatewayRuntime(t)
	require.NoError(t, g.load(t, `mcp_serve{http = "127.0.0.1:8931"}`))
	require.Equal(t, [2]string{"127.0.0.1:8931", ""}, g.gw.nextServe(t), "the listener starts with the config")

	require.NoError(t, g.load(t, `mcp_serve{http = "127.0.0.1:8931"}`))
	g.gw.noServe(t) // the same address again changes nothing

	require.NoError(t, g.load(t, `mcp_serve{http = "127.0.0.1:8931", token_file = "tok"}`))
	require.Equal(t, [2]string{"127.0.0.1:8931", "tok"}, g.gw.nextServe(t), "a new token file restarts the listener")

	require.NoError(t, g.load(t, `mcp_serve{http = "127.0.0.1:9000", token_file = "tok"}`))
	require.Equal(t, [2]string{"127.0.0.1:9000", "tok"}, g.gw.nextServe(t), "a new address moves it")

	require.NoError(t, g.load(t, `-- no listener any more`))
	require.Equal(t, [2]string{"", ""}, g.gw.nextServe(t), "a config without mcp_serve stops it")

	require.NoError(t, g.load(t, `-- still none`))
	g.gw.noServe(t)
}

func TestMcpServeBrokenConfigChangesNothing(t *testing.T) {
	g := newGatewayRuntime(t)
	require.NoError(t, g.load(t, `mcp_serve{http = "127.0.0.1:8931"}`))
	g.gw.nextServe(t)
	for _, tc := range []struct{ src, want string }{
		{"mcp_serve{http = \"127.0.0.1:9000\"}\nerror(\"later\")", "startup.lua:2: later"},
		{`mcp_serve{http = "8931"}`, `startup.lua:1: bad argument #1 to mcp_serve (http = "8931" is not host:port`},
		{`mcp_serve{}`, "http is required"},
		{`mcp_serve{http = "127.0.0.1:1", tls = true}`, "unknown option tls"},
		{"mcp_serve{http = \"127.0.0.1:1\"}\nmcp_serve{http = \"127.0.0.1:2\"}", "mcp_serve is declared twice in startup.lua (first at startup.lua:1)"},
	} {
		err := g.load(t, tc.src)
		require.ErrorContains(t, err, tc.want, tc.src)
	}
	g.gw.noServe(t) // the listener the last good config declared stays
}

func TestMcpServeFailureIsReportedAndRetried(t *testing.T) {
	g := newGatewayRuntime(t)
	w := watchBus(t, g.m.Bus())
	g.gw.failOn("127.0.0.1:8931")
	err := g.load(t, "mcp_add(\"demo\", {command = {\"demo\"}})\nmcp_serve{http = \"127.0.0.1:8931\"}")
	require.ErrorContains(t, err, `startup.lua:2: mcp_serve(http = "127.0.0.1:8931"): listen tcp 127.0.0.1:8931: bind: address already in use`)
	g.gw.nextServe(t)
	e := w.next(t, "config_error", kindIs(events.KindConfigError))
	require.Contains(t, e.Fields["error"], "address already in use")
	require.Equal(t, "connected", g.one(t, `assert(mcp_wait("demo", "connected")); return mcp_status("demo").state`),
		"the rest of the config is applied")

	g.gw.failOn("")
	require.NoError(t, g.load(t, "mcp_add(\"demo\", {command = {\"demo\"}})\nmcp_serve{http = \"127.0.0.1:8931\"}"))
	require.Equal(t, [2]string{"127.0.0.1:8931", ""}, g.gw.nextServe(t), "the same declaration is tried again")
}

func TestMcpServeAtTheREPL(t *testing.T) {
	g := newGatewayRuntime(t)
	require.Equal(t, "true", g.one(t, `return mcp_serve{http = "127.0.0.1:8931"}`))
	require.Equal(t, [2]string{"127.0.0.1:8931", ""}, g.gw.nextServe(t))
	g.gw.failOn("127.0.0.1:9")
	require.Equal(t, []string{"nil", `test:1: mcp_serve(http = "127.0.0.1:9"): listen tcp 127.0.0.1:9: bind: address already in use`},
		g.run(t, `local ok, err = mcp_serve{http = "127.0.0.1:9"}; return ok, err`))
}

func TestGatewayBuiltinsWithoutAGateway(t *testing.T) {
	r := newTestRuntime(t, nil)
	for _, src := range []string{`mcp_serve{http = "127.0.0.1:8931"}`, `mcp_toolset("git", {include = {"git.*"}})`, `return mcp_clients()`,
		`mcp_name_budget("x", 20)`} {
		le := r.fail(t, src)
		require.Contains(t, le.Message, "this host serves no MCP clients", src)
		require.Contains(t, le.Message, "luaapi.Options.Gateway is nil", src)
	}
	// Checking a config needs no gateway.
	decls, err := r.CheckConfig(context.Background(), "startup.lua",
		`mcp_serve{http = "127.0.0.1:8931"}; mcp_toolset("git", {include = {"git.*"}}); mcp_add("a", {command = {"a"}})`)
	require.NoError(t, err)
	require.Len(t, decls, 1)
}

func TestMcpToolsetPatternsFollowTheConfig(t *testing.T) {
	g := newGatewayRuntime(t)
	require.NoError(t, g.load(t, `
		mcp_toolset("git", {include = {"git.*", "fs.read_*"}, exclude = {"git.push"}})
		mcp_toolset("all", {})`))
	sets := g.gw.nextSets(t)
	require.Equal(t, []string{"git.*", "fs.read_*"}, sets["git"].Include)
	require.Equal(t, []string{"git.push"}, sets["git"].Exclude)
	require.Contains(t, sets, "all")
	require.False(t, sets["git"].Resolved, "patterns are the gateway's to match")

	require.NoError(t, g.load(t, `
		mcp_toolset("git", {include = {"git.*", "fs.read_*"}, exclude = {"git.push"}})
		mcp_toolset("all", {})`))
	g.gw.noSets(t) // unchanged: the gateway has nothing to do

	require.NoError(t, g.load(t, `mcp_toolset("git", {include = {"git.*"}})`))
	sets = g.gw.nextSets(t)
	require.NotContains(t, sets, "all", "a toolset the config no longer declares is removed")
	require.Equal(t, []string{"git.*"}, sets["git"].Include)

	for _, tc := range []struct{ src, want string }{
		{`mcp_toolset("x", {include = {"git.["}})`, `toolset "x": include: bad pattern "git.["`},
		{`mcp_toolset("a/b", {})`, "may hold only letters"},
		{`mcp_toolset("x", {includes = {}})`, "unknown field includes"},
		{"mcp_toolset(\"x\", {})\nmcp_toolset(\"x\", {})", `toolset "x" is declared twice in startup.lua (first at startup.lua:1)`},
	} {
		require.ErrorContains(t, g.load(t, tc.src), tc.want, tc.src)
	}
	g.gw.noSets(t)

	// At the REPL it applies at once, and a reload keeps it.
	g.run(t, `mcp_toolset("mine", {include = {"demo.*"}})`)
	require.Contains(t, g.gw.nextSets(t), "mine")
	require.NoError(t, g.load(t, `-- no toolsets`))
	sets = g.gw.nextSets(t)
	require.Contains(t, sets, "mine")
	require.NotContains(t, sets, "git")
}

func TestMcpClients(t *testing.T) {
	g := newGatewayRuntime(t)
	require.Equal(t, "0", g.one(t, `return #mcp_clients()`))
	since := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	g.gw.clients = []luaapi.Client{{ID: "abc123", Name: "claude-ai", Version: "0.1", Transport: "http", Endpoint: "/mcp", Since: since}}
	require.Equal(t, `abc123 claude-ai 0.1 http /mcp 2025-03-01T12:00:00Z`, g.one(t, `
		local c = mcp_clients()[1]
		return table.concat({c.id, c.name, c.version, c.transport, c.endpoint, c.since}, " ")`))
}

// A config that serves starts the gateway before it adds its servers, so
// that they are told from their first connection what the gateway's
// clients can answer.
func TestMcpServeStartsTheGatewayFirst(t *testing.T) {
	g := newGatewayRuntime(t)
	serversAtStart := -1
	g.gw.started = func() { serversAtStart = len(g.m.Names()) }
	require.NoError(t, g.load(t, "mcp_add(\"demo\", {command = {\"demo\"}})\nmcp_serve{http = \"127.0.0.1:8931\"}"))
	require.Equal(t, 0, serversAtStart, "the gateway started after the servers were added (or not at all)")
}

// mcp_name_budget gives clients other name budgets: the config's rules
// follow the file, in order; the REPL's come first and n = nil drops one.
func TestMcpNameBudget(t *testing.T) {
	g := newGatewayRuntime(t)
	require.NoError(t, g.load(t, `
		mcp_name_budget("claude-code", 40)
		mcp_name_budget("*cursor*", 30)`))
	require.Equal(t, []luaapi.NameBudget{{Client: "claude-code", Budget: 40}, {Client: "*cursor*", Budget: 30}}, g.gw.nextBudgets(t))

	require.NoError(t, g.load(t, `mcp_name_budget("claude-code", 40); mcp_name_budget("*cursor*", 30)`))
	select {
	case b := <-g.gw.budgets:
		t.Fatalf("the same rules again were given to the gateway: %v", b)
	default:
	}

	g.run(t, `mcp_name_budget("my-agent", 20)`)
	require.Equal(t, []luaapi.NameBudget{{Client: "my-agent", Budget: 20}, {Client: "claude-code", Budget: 40}, {Client: "*cursor*", Budget: 30}},
		g.gw.nextBudgets(t), "the REPL's rules come first")
	require.NoError(t, g.load(t, `mcp_name_budget("claude-code", 44)`))
	require.Equal(t, []luaapi.NameBudget{{Client: "my-agent", Budget: 20}, {Client: "claude-code", Budget: 44}}, g.gw.nextBudgets(t),
		"a reload replaces the config's rules and keeps the REPL's")
	g.run(t, `mcp_name_budget("my-agent", nil)`)
	require.Equal(t, []luaapi.NameBudget{{Client: "claude-code", Budget: 44}}, g.gw.nextBudgets(t))

	for _, tc := range []struct{ src, want string }{
		{`mcp_name_budget("x", 8)`, "from 16 to 128"},
		{`mcp_name_budget("x", 20.5)`, "whole number"},
		{`mcp_name_budget("[", 20)`, "bad client name pattern"},
		{`mcp_name_budget("x", nil)`, "a number of characters expected"},
		{"mcp_name_budget(\"x\", 20)\nmcp_name_budget(\"x\", 30)", `mcp_name_budget("x") is declared twice in startup.lua (first at startup.lua:1)`},
	} {
		require.ErrorContains(t, g.load(t, tc.src), tc.want, tc.src)
	}
}
