package luaapi_test

// mcp_toolset with a function: the runtime asks the function on its own
// loop whenever the tools or the toolset change and hands the gateway the
// tools it chose, as versioned snapshots; the gateway never calls back.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// toolServer is an in-memory server listing the tools named; more can be
// added while it is connected (its session announces them).
func toolServer(names ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "v0"}, nil)
	for _, n := range names {
		addTool(s, n)
	}
	return s
}

func addTool(s *mcp.Server, name string) {
	s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
}

// namedDial connects each server to the server of its name, a session
// per connection, closed when the test ends.
func namedDial(t testing.TB, servers map[string]*mcp.Server) manager.DialFunc {
	var mu sync.Mutex
	var sessions []*mcp.ServerSession
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
			_ = ss.Wait()
		}
	})
	return func(ctx context.Context, server string, _ manager.Spec) (mcp.Transport, error) {
		s, ok := servers[server]
		if !ok {
			return nil, fmt.Errorf("no test server %q", server)
		}
		clientT, serverT := mcp.NewInMemoryTransports()
		ss, err := s.Connect(context.Background(), serverT, nil)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return clientT, nil
	}
}

// until takes the toolsets handed over until ok accepts them and returns
// them; it fails the test if that does not happen in time.
func (g *fakeGateway) until(t *testing.T, what string, ok func(map[string]luaapi.Toolset) bool) map[string]luaapi.Toolset {
	t.Helper()
	deadline := time.After(waitDeadline)
	var last map[string]luaapi.Toolset
	for {
		select {
		case s := <-g.sets:
			if ok(s) {
				return s
			}
			last = s
		case <-deadline:
			t.Fatalf("%s: not handed over; last: %+v", what, last)
		}
	}
}

// latestSets is the toolsets last handed over.
func (g *fakeGateway) latestSets() map[string]luaapi.Toolset {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.latest
}

// chose accepts toolsets where name is resolved to exactly tools.
func chose(name string, tools ...string) func(map[string]luaapi.Toolset) bool {
	return func(s map[string]luaapi.Toolset) bool {
		ts, ok := s[name]
		return ok && ts.Resolved && slices.Equal(ts.Tools, tools)
	}
}

// A toolset's function decides on the loop, and the gateway gets the
// tools it chose: again when the tools change, and when the function is
// declared anew.
func TestMcpToolsetFunctionFollowsTheTools(t *testing.T) {
	fs, git := toolServer("read_file", "write_file", "boom"), toolServer("read")
	g := newGatewayRuntimeDial(t, namedDial(t, map[string]*mcp.Server{"fs": fs, "git": git}))
	w := watchBus(t, g.m.Bus())
	require.NoError(t, g.load(t, `
		mcp_add("fs", {command = {"fs"}})
		mcp_add("git", {command = {"git"}})
		mcp_toolset("readers", function(tool)
		  if tool.tool == "boom" then error("no such luck") end
		  return tool.tool:match("^read") ~= nil
		end)`))
	g.run(t, `assert(mcp_wait("fs", "connected")); assert(mcp_wait("git", "connected"))`)
	sets := g.gw.until(t, "both servers' readers", chose("readers", "fs.read_file", "git.read"))
	v1 := sets["readers"].Version
	e := w.next(t, "hook_error", kindIs(events.KindHookError))
	require.Equal(t, `mcp_toolset("readers")`, e.Fields["hook"])
	require.Equal(t, "fs.boom", e.Fields["tool"], "a failing function leaves its tool out and says so")
	require.Contains(t, e.Fields["error"], "no such luck")

	addTool(git, "read_log")
	sets = g.gw.until(t, "a new tool", chose("readers", "fs.read_file", "git.read", "git.read_log"))
	require.Greater(t, sets["readers"].Version, v1)

	// Declared anew at the REPL, the function decides again.
	g.run(t, `mcp_toolset("readers", function(tool) return tool.server == "git" end)`)
	g.gw.until(t, "the new function's choice", chose("readers", "git.read", "git.read_log"))
}

// A function that blocks or loops costs its own toolset only: the other
// toolsets are handed over meanwhile, the gateway keeps what it had for
// this one, and the tools it did not answer for (within FilterTimeout,
// or a slice within the slice budget) are left out.
func TestMcpToolsetFunctionThatDoesNotAnswer(t *testing.T) {
	for _, tc := range []struct{ name, body, why string }{
		{"blocks", `sleep(3600); return true`, "no answer for 4 of 4 tools within 1s"},
		{"loops", `while true do end`, "without yielding"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatewayRuntime(t)
			w := watchBus(t, g.m.Bus())
			require.NoError(t, g.load(t, `mcp_add("demo", {command = {"demo"}})`))
			g.run(t, `assert(mcp_wait("demo", "connected"))`)
			require.Equal(t, "4", g.one(t, `return #mcp_tools()`))
			g.run(t, `mcp_toolset("stuck", function(tool) `+tc.body+` end)`)
			g.run(t, `mcp_toolset("echo", function(tool) return tool.tool == "echo" end)`)
			g.run(t, `mcp_toolset("pattern", {include = {"demo.add"}})`)
			g.gw.until(t, "the other toolsets", func(s map[string]luaapi.Toolset) bool {
				return chose("echo", "demo.echo")(s) && len(s["pattern"].Include) == 1
			})
			stuck := g.gw.latestSets()["stuck"]
			require.True(t, stuck.Resolved)
			require.Empty(t, stuck.Tools, "nothing chosen yet")

			e := w.next(t, "the stuck function's failure", func(e events.Event) bool {
				return e.Kind == events.KindHookError && e.Fields["hook"] == `mcp_toolset("stuck")`
			})
			require.Contains(t, e.Fields["error"], tc.why)
			require.Equal(t, stuck.Version, g.gw.latestSets()["stuck"].Version, "still nothing chosen: no new snapshot")
			require.Equal(t, "ok", g.one(t, `return "ok"`), "the loop is free again")
		})
	}
}

// Every new snapshot of a toolset has a version above every snapshot
// handed over before, of any toolset; an unchanged toolset keeps its own.
func TestMcpToolsetVersionsOnlyGrow(t *testing.T) {
	fs := toolServer("read_file")
	g := newGatewayRuntimeDial(t, namedDial(t, map[string]*mcp.Server{"fs": fs}))
	require.NoError(t, g.load(t, `
		mcp_add("fs", {command = {"fs"}})
		mcp_toolset("all", {})
		mcp_toolset("fn", function(tool) return true end)`))
	g.run(t, `assert(mcp_wait("fs", "connected"))`)
	var seen []map[string]luaapi.Toolset
	record := func(what string, ok func(map[string]luaapi.Toolset) bool) {
		t.Helper()
		g.gw.until(t, what, func(s map[string]luaapi.Toolset) bool {
			seen = append(seen, s)
			return ok(s)
		})
	}
	record("fs's tool", chose("fn", "fs.read_file"))
	addTool(fs, "write_file")
	record("a new tool", chose("fn", "fs.read_file", "fs.write_file"))
	g.run(t, `mcp_toolset("fn", {include = {"fs.read*"}})`)
	record("patterns instead", func(s map[string]luaapi.Toolset) bool { return !s["fn"].Resolved })
	require.NoError(t, g.load(t, `mcp_add("fs", {command = {"fs"}})`))
	record("all removed", func(s map[string]luaapi.Toolset) bool { _, ok := s["all"]; return !ok })
	require.NoError(t, g.load(t, `mcp_add("fs", {command = {"fs"}}); mcp_toolset("all", {})`))
	record("all again", func(s map[string]luaapi.Toolset) bool { _, ok := s["all"]; return ok })

	var top uint64
	last := map[string]luaapi.Toolset{}
	for i, sets := range seen {
		for _, name := range slices.Sorted(maps.Keys(sets)) {
			ts := sets[name]
			prev, had := last[name]
			switch {
			case had && ts.Version == prev.Version:
				require.Equal(t, prev, ts, "hand-over %d: %s changed and kept its version", i, name)
			case had && ts.Version < prev.Version:
				t.Fatalf("hand-over %d: %s went back from version %d to %d", i, name, prev.Version, ts.Version)
			case !had || ts.Version > prev.Version:
				require.Greater(t, ts.Version, top, "hand-over %d: %s's new snapshot reuses a version", i, name)
			}
			last[name] = ts
		}
		for _, ts := range sets {
			top = max(top, ts.Version)
		}
		for name := range last {
			if _, ok := sets[name]; !ok {
				delete(last, name)
			}
		}
	}
}
