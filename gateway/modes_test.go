package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/expose"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// catalogueServers are the servers of the tool search's test catalogue
// (the reference servers' real tool lists and look-alikes of popular
// servers, 341 tools), each in-process and answering every call with
// "server:tool".
func catalogueServers(t testing.TB) map[string]manager.Spec {
	t.Helper()
	b, err := os.ReadFile("toolsearch/testdata/catalogue.json")
	require.NoError(t, err)
	var c struct {
		Servers []struct {
			Name  string      `json:"name"`
			Tools []*mcp.Tool `json:"tools"`
		} `json:"servers"`
	}
	require.NoError(t, json.Unmarshal(b, &c))
	out := map[string]manager.Spec{}
	for _, s := range c.Servers {
		srv := mcp.NewServer(&mcp.Implementation{Name: s.Name, Version: "1"}, nil)
		for _, tool := range s.Tools {
			answer := s.Name + ":" + tool.Name
			srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil
			})
		}
		out[s.Name] = manager.Spec{Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: srv}}
	}
	return out
}

// modeRig serves the catalogue and the demo server, whose fail tool is
// hidden and echo pinned, add tagged and sleep described anew; a toolset
// "math" holds only demo.add. Clients called "direct" get direct mode,
// the others mode.
func modeRig(t *testing.T, mode gateway.Mode, code func(context.Context, string, gateway.CodeEnv) (*mcp.CallToolResult, error)) *rig {
	t.Helper()
	servers := catalogueServers(t)
	servers["demo"] = manager.Spec{Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: demo.NewServer()},
		Expose: expose.Rules{Hide: []string{"fail"}, Pin: []string{"echo"},
			Tags:     map[string][]string{"add": {"arithmetic"}},
			Describe: map[string]string{"sleep": "Take a nap for a number of milliseconds."}}}
	r := newRigWith(t, servers, gateway.Options{Mode: mode, Code: code, Wait: 20 * time.Second,
		ModeFor: func(q gateway.ModeQuery) gateway.Mode {
			if q.Client == "direct" {
				return gateway.ModeDirect
			}
			return ""
		}}, gateway.HTTPOptions{})
	r.gw.SetToolsets(map[string]gateway.Toolset{"math": {Include: []string{"demo.add"}}})
	r.wait("demo")
	return r
}

// connectAs is connect with the client's name.
func connectAs(t testing.TB, transport mcp.Transport, name string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
	cs, err := c.Connect(ctx, transport, sessionOver(transport))
	require.NoError(t, err, "connect")
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// listBytes is the size of a client's whole tools/list answer as JSON.
func listBytes(t testing.TB, cs *mcp.ClientSession) int {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Empty(t, res.NextCursor, "one page")
	b, err := json.Marshal(res)
	require.NoError(t, err)
	return len(b)
}

// A client in search mode is offered the meta-tools and the pinned tool
// instead of the catalogue, in under 5 % of the bytes, finds tools by
// what they do and calls them; a client the mode function puts in direct
// mode on the same endpoint still gets everything.
func TestSearchModeFindsAndCalls(t *testing.T) {
	r := modeRig(t, gateway.ModeSearch, nil)
	direct := connectAs(t, r.streamable("/mcp"), "direct")
	all := toolNames(t, direct)
	require.GreaterOrEqual(t, len(all), 340, "the direct client lists the catalogue")

	for _, tr := range []string{"http", "stdio"} {
		t.Run(tr, func(t *testing.T) {
			transport := r.streamable("/mcp")
			if tr == "stdio" {
				transport = r.stdio(t, "")
			}
			cs := connectAs(t, transport, "agent")
			require.Equal(t, []string{"search_tools", "describe_tools", "call_tool", "demo__echo"}, toolNames(t, cs))
			searchBytes, directBytes := listBytes(t, cs), listBytes(t, direct)
			t.Logf("tools/list: search mode %d bytes, direct %d", searchBytes, directBytes)
			assert.LessOrEqual(t, float64(searchBytes), 0.05*float64(directBytes), "search mode's list (%d bytes) against direct's (%d)", searchBytes, directBytes)

			res := call(t, cs, "search_tools", map[string]any{"query": "sum of two integers", "limit": 5})
			require.False(t, res.IsError, text(res))
			assert.Contains(t, text(res), "demo__add (demo): Add two integers.")
			assert.Contains(t, firstLines(text(res), 5), "demo__add")

			res = call(t, cs, "search_tools", map[string]any{"query": "arithmetic", "limit": 3})
			assert.Contains(t, firstLines(text(res), 1), "demo__add", "a user's tag is matched")
			assert.Contains(t, text(res), "arithmetic in tags")

			res = call(t, cs, "search_tools", map[string]any{"query": "nap", "server": "demo"})
			assert.Contains(t, text(res), "demo__sleep (demo): Take a nap", "a user's description is searched and shown")

			res = call(t, cs, "search_tools", map[string]any{"query": "create issue", "server": "jira", "limit": 3})
			for _, line := range strings.Split(strings.TrimSpace(firstLines(text(res), 3)), "\n") {
				assert.Contains(t, line, "(jira)", "the server filter")
			}

			res = call(t, cs, "describe_tools", map[string]any{"names": []any{"demo__add", "nope__x"}})
			assert.False(t, res.IsError)
			assert.Contains(t, text(res), `"name":"demo__add"`)
			assert.Contains(t, text(res), `"inputSchema"`)
			assert.Contains(t, text(res), `"nope__x"`, "a name it does not know is said so")

			res = call(t, cs, "call_tool", map[string]any{"name": "demo__add", "arguments": map[string]any{"a": 2, "b": 3}})
			require.False(t, res.IsError, text(res))
			assert.Equal(t, "5", text(res))
			res = call(t, cs, "call_tool", map[string]any{"name": "jira__jira_create_issue", "arguments": map[string]any{"project_key": "X", "summary": "y", "issue_type": "Task"}})
			assert.Equal(t, "jira:jira_create_issue", text(res), text(res))

			res = call(t, cs, "demo__echo", map[string]any{"text": "pinned"})
			assert.Equal(t, "pinned", text(res), "a pinned tool is called directly")
		})
	}
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}

// What a client may not see it can neither find nor call: a tool the
// user hides, and a tool outside the client's toolset.
func TestSearchModeHidesWhatTheClientMayNotSee(t *testing.T) {
	r := modeRig(t, gateway.ModeSearch, nil)
	cs := connectAs(t, r.streamable("/mcp"), "agent")
	res := call(t, cs, "search_tools", map[string]any{"query": "always fail", "server": "demo"})
	assert.NotContains(t, text(res), "demo__fail")
	res = call(t, cs, "call_tool", map[string]any{"name": "demo__fail", "arguments": map[string]any{"message": "x"}})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "UNKNOWN_TOOL")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	direct, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__fail", Arguments: map[string]any{"message": "x"}})
	assert.True(t, err != nil || direct.IsError && !strings.Contains(text(direct), "x"), "a hidden tool called by its name is not called")
	own := connectAs(t, r.streamable("/servers/demo/mcp"), "direct")
	direct, err = own.CallTool(ctx, &mcp.CallToolParams{Name: "fail", Arguments: map[string]any{"message": "x"}})
	assert.True(t, err != nil || direct.IsError && !strings.Contains(text(direct), "x"), "nor on its server's own endpoint")

	math := connectAs(t, r.streamable("/toolsets/math/mcp"), "agent")
	res = call(t, math, "search_tools", map[string]any{"query": "return the given text unchanged echo"})
	assert.NotContains(t, text(res), "demo__echo", "a tool outside the toolset is not found")
	res = call(t, math, "search_tools", map[string]any{"query": "add integers"})
	assert.Contains(t, text(res), "demo__add")
	res = call(t, math, "call_tool", map[string]any{"name": "demo__echo", "arguments": map[string]any{"text": "x"}})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "UNKNOWN_TOOL")
	res = call(t, math, "call_tool", map[string]any{"name": "demo__add", "arguments": map[string]any{"a": 1, "b": 1}})
	assert.Equal(t, "2", text(res))
}

// call_tool checks its own arguments, and the tool's arguments are
// validated as in a direct call; every mistake is an isError result a
// model can read.
func TestCallToolValidation(t *testing.T) {
	r := modeRig(t, gateway.ModeSearch, nil)
	log := watchEvents(t, r.m)
	cs := connectAs(t, r.streamable("/mcp"), "agent")
	for _, c := range []struct {
		args any
		want string
	}{
		{map[string]any{}, "name is required"},
		{map[string]any{"name": 7}, "name must be a JSON string"},
		{map[string]any{"name": "demo__add", "arguments": "a=1"}, "arguments must be a JSON object"},
		{map[string]any{"name": "search_tools"}, "is one of the meta-tools"},
		{map[string]any{"name": "demo__add", "arguments": map[string]any{"a": "two", "b": 3}}, "INVALID_ARGUMENTS"},
		{map[string]any{"name": "nowhere__tool"}, "UNKNOWN_TOOL"},
	} {
		res := call(t, cs, "call_tool", c.args)
		require.True(t, res.IsError, "%v: %s", c.args, text(res))
		assert.Contains(t, text(res), c.want, "%v", c.args)
	}
	res := call(t, cs, "search_tools", map[string]any{"query": ""})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "INVALID_ARGUMENTS")

	// A call through call_tool is the client's own, as events tell.
	call(t, cs, "call_tool", map[string]any{"name": "demo__echo", "arguments": map[string]any{"text": "e"}})
	e := log.next(t, events.KindToolCall, 10*time.Second, func(e events.Event) bool { return e.Server == "demo" && e.Text("tool") == "echo" })
	assert.Contains(t, e.Text("client"), "agent/1")
}

// The index follows the servers: a tool a server adds is found, one it
// removes is not.
func TestSearchIndexFollowsTools(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "grow", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "forecast", Description: "Weather forecast for a city.", InputSchema: map[string]any{"type": "object"}}, noop)
	r := newRigWith(t, map[string]manager.Spec{"grow": {Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: srv}}},
		gateway.Options{Mode: gateway.ModeSearch}, gateway.HTTPOptions{})
	r.wait("grow")
	cs := connectAs(t, r.streamable("/mcp"), "agent")
	assert.Contains(t, text(call(t, cs, "search_tools", map[string]any{"query": "weather"})), "grow__forecast")

	srv.AddTool(&mcp.Tool{Name: "translate", Description: "Translate text into another language.", InputSchema: map[string]any{"type": "object"}}, noop)
	srv.RemoveTools("forecast")
	pollUntil(t, 20*time.Second, "the new tool found, the old one gone", func() bool {
		return strings.Contains(text(call(t, cs, "search_tools", map[string]any{"query": "translate language weather"})), "grow__translate") &&
			!strings.Contains(text(call(t, cs, "search_tools", map[string]any{"query": "weather forecast"})), "grow__forecast")
	})
}

// fakeLua stands for the Lua runtime: "call NAME JSON" lines call tools,
// "search QUERY" searches, "block" waits for the run to be cancelled; the
// results come back one per line.
type fakeLua struct {
	mu   sync.Mutex
	envs []gateway.CodeEnv
	// ended gets the cause of every run that was cancelled.
	ended chan error
}

func (f *fakeLua) run(ctx context.Context, code string, env gateway.CodeEnv) (*mcp.CallToolResult, error) {
	f.mu.Lock()
	f.envs = append(f.envs, env)
	f.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(code), "\n") {
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "call":
			name, raw, _ := strings.Cut(rest, " ")
			var args map[string]any
			if raw != "" {
				if err := json.Unmarshal([]byte(raw), &args); err != nil {
					return nil, err
				}
			}
			res, err := env.Call(ctx, name, args)
			if err != nil {
				return nil, err
			}
			out = append(out, text(res))
		case "search":
			for _, h := range env.Search(rest, 3, "") {
				out = append(out, h.Name+" "+h.Why)
			}
		case "block":
			<-ctx.Done()
			f.ended <- context.Cause(ctx)
			return nil, ctx.Err()
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(out, "\n")}}}, nil
}

func (f *fakeLua) lastEnv() gateway.CodeEnv {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.envs[len(f.envs)-1]
}

// A client in code mode is offered run_lua alone, naming the servers; a
// chunk calls the client's tools as the client would, and never one it
// may not see.
func TestCodeModeRunsChunks(t *testing.T) {
	lua := &fakeLua{ended: make(chan error, 1)}
	r := modeRig(t, gateway.ModeCode, lua.run)
	cs := connectAs(t, r.stdio(t, ""), "agent")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	require.Len(t, list.Tools, 1)
	assert.Equal(t, "run_lua", list.Tools[0].Name)
	assert.Contains(t, list.Tools[0].Description, "demo, docker")
	assert.Contains(t, list.Tools[0].Description, "search_tools(")

	res := call(t, cs, "run_lua", map[string]any{"code": "call demo__add {\"a\":2,\"b\":3}\ncall demo__echo {\"text\":\"seen\"}\nsearch sum of integers"})
	require.False(t, res.IsError, text(res))
	lines := strings.Split(text(res), "\n")
	assert.Equal(t, []string{"5", "seen"}, lines[:2])
	assert.Contains(t, lines[2], "demo__add")

	env := lua.lastEnv()
	i := slices.IndexFunc(env.Tools, func(c gateway.CodeTool) bool { return c.Name == "demo__add" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "demo", env.Tools[i].Server)
	assert.Equal(t, "add", env.Tools[i].Tool)
	assert.Contains(t, string(env.Tools[i].InputSchema), `"a"`)
	assert.False(t, slices.ContainsFunc(env.Tools, func(c gateway.CodeTool) bool { return c.Name == "demo__fail" }), "a hidden tool is not offered")

	res = call(t, cs, "run_lua", map[string]any{"code": "call demo__fail {\"message\":\"x\"}"})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "UNKNOWN_TOOL")
	_, err = env.Call(ctx, "demo__fail", nil)
	var unknown *gateway.UnknownToolError
	assert.True(t, errors.As(err, &unknown), "%v", err)

	res = call(t, cs, "run_lua", map[string]any{"code": "call demo__add {\"a\":\"two\"}"})
	assert.Contains(t, text(res), "INVALID_ARGUMENTS", "a tool's arguments are validated as in a direct call")

	// A client that cancels its call ends the run.
	callCtx, stop := context.WithCancel(ctx)
	go func() {
		_, _ = cs.CallTool(callCtx, &mcp.CallToolParams{Name: "run_lua", Arguments: map[string]any{"code": "block"}})
	}()
	pollUntil(t, 10*time.Second, "the blocking run started", func() bool {
		lua.mu.Lock()
		defer lua.mu.Unlock()
		return len(lua.envs) == 4
	})
	stop()
	select {
	case <-lua.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not cancelled with the client's call")
	}
	assert.Equal(t, "5", text(call(t, cs, "run_lua", map[string]any{"code": "call demo__add {\"a\":2,\"b\":3}"})), "the next run still runs")
}

// Code mode needs something to run the chunks: without it the gateway
// refuses it when it starts, and a mode function asking for it gets
// search mode instead.
func TestCodeModeNeedsARunner(t *testing.T) {
	err := gateway.Options{Mode: gateway.ModeCode}.Check()
	require.ErrorIs(t, err, &gateway.ModeError{Code: gateway.CodeNoCodeRunner})
	_, err = gateway.ParseMode("lazy")
	require.ErrorIs(t, err, &gateway.ModeError{Code: gateway.CodeUnknownMode})
	m, err := gateway.ParseMode("Search")
	require.NoError(t, err)
	require.Equal(t, gateway.ModeSearch, m)

	r := newRigWith(t, map[string]manager.Spec{"demo": {Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: demo.NewServer()}}},
		gateway.Options{ModeFor: func(gateway.ModeQuery) gateway.Mode { return gateway.ModeCode }}, gateway.HTTPOptions{})
	r.wait("demo")
	cs := connectAs(t, r.streamable("/mcp"), "agent")
	assert.Contains(t, toolNames(t, cs), "search_tools")
}

// A prefix renames the meta-tools, for clients that need them told apart
// from the tools' own.
func TestMetaPrefix(t *testing.T) {
	r := newRigWith(t, map[string]manager.Spec{"demo": {Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: demo.NewServer()}}},
		gateway.Options{Mode: gateway.ModeSearch, MetaPrefix: "mv_"}, gateway.HTTPOptions{})
	r.wait("demo")
	cs := connectAs(t, r.streamable("/mcp"), "agent")
	require.Equal(t, []string{"mv_search_tools", "mv_describe_tools", "mv_call_tool"}, toolNames(t, cs))
	assert.Contains(t, text(call(t, cs, "mv_search_tools", map[string]any{"query": "add integers"})), "demo__add")
	assert.Equal(t, "3", text(call(t, cs, "mv_call_tool", map[string]any{"name": "demo__add", "arguments": map[string]any{"a": 1, "b": 2}})))
	res := call(t, cs, "mv_call_tool", map[string]any{"name": "mv_search_tools"})
	assert.True(t, res.IsError)
}

// What each mode's list costs in tokens: search and code mode cost a
// small part of the catalogue's.
func TestModeCosts(t *testing.T) {
	r := modeRig(t, gateway.ModeSearch, nil)
	pollUntil(t, 20*time.Second, "every server listed", func() bool {
		return r.gw.ModeCosts()[0].Tools >= 340
	})
	costs := r.gw.ModeCosts()
	all := costs[0]
	t.Logf("%s: %d tools; tokens: direct %d, search %d, code %d", all.Endpoint, all.Tools, all.Direct, all.Search, all.Code)
	assert.Equal(t, "/mcp", all.Endpoint)
	assert.Greater(t, all.Direct, 30000, "the catalogue costs tens of thousands of tokens")
	assert.LessOrEqual(t, float64(all.Search), 0.05*float64(all.Direct), "%+v", all)
	assert.LessOrEqual(t, float64(all.Code), 0.05*float64(all.Direct), "%+v", all)
	assert.Equal(t, "/toolsets/math/mcp", costs[1].Endpoint)
	assert.Equal(t, 1, costs[1].Tools)
	i := slices.IndexFunc(costs, func(c gateway.ModeCost) bool { return c.Endpoint == "/servers/demo/mcp" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, 3, costs[i].Tools, "demo's tools but the hidden one")
	assert.Equal(t, gateway.ModeSearch, all.Mode, "the gateway's mode")
	assert.Equal(t, gateway.ModeSearch, costs[1].Mode, "a toolset without a mode of its own")

	// A toolset with a mode of its own is counted in it.
	r.gw.SetToolsets(map[string]gateway.Toolset{"math": {Include: []string{"demo.*"}, Mode: gateway.ModeDirect}})
	costs = r.gw.ModeCosts()
	assert.Equal(t, gateway.ModeDirect, costs[1].Mode)
	assert.Equal(t, 3, costs[1].Tools)
}

// A client given a shorter name budget finds tools under the names its
// own list would have, and calls them by those names.
func TestSearchModeUnderAClientBudget(t *testing.T) {
	r := modeRig(t, gateway.ModeSearch, nil)
	r.gw.SetClientBudgets([]gateway.ClientBudget{{Client: "short", Budget: 16}})
	cs := connectAs(t, r.streamable("/mcp"), "short")
	res := call(t, cs, "search_tools", map[string]any{"query": "create jira issue", "server": "jira", "limit": 1})
	name, _, _ := strings.Cut(text(res), " ")
	require.LessOrEqual(t, len(name), 16, text(res))
	require.True(t, strings.HasPrefix(name, "jira__"), text(res))
	res = call(t, cs, "describe_tools", map[string]any{"names": []any{name}})
	require.False(t, res.IsError, text(res))
	res = call(t, cs, "call_tool", map[string]any{"name": name, "arguments": map[string]any{"project_key": "X", "summary": "y", "issue_type": "Task"}})
	assert.Equal(t, "jira:jira_create_issue", text(res))
}

// Progress of a tool called through call_tool reaches the client under
// the token it gave call_tool.
func TestCallToolProgress(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "slow", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "work", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if tok := req.Params.GetProgressToken(); tok != nil {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2}); err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	r := newRigWith(t, map[string]manager.Spec{"slow": {Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: srv}}},
		gateway.Options{Mode: gateway.ModeSearch}, gateway.HTTPOptions{})
	r.wait("slow")
	n := newNotes()
	cs := connect(t, r.streamable("/mcp"), n)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "slow__work"}}
	params.SetProgressToken("mine")
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	require.Equal(t, "done", text(res))
	seen := n.progressSeen()
	require.Len(t, seen, 1, "the progress goes out before the result")
	assert.Equal(t, "mine", seen[0].ProgressToken)
}

// A list of meta-tools says how it may be cached in words clients of
// the newer protocol accept, as a direct list does: Claude Code rejects
// a whole tools/list whose cacheScope is neither "public" nor "private"
// and is then left with no tools at all.
func TestModeListsSayHowToCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // one deadline for three rigs, on a machine that may be busy
	defer cancel()
	scope := func(t *testing.T, cs *mcp.ClientSession) string {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		require.NoError(t, err)
		return res.CacheScope
	}
	for _, mode := range []gateway.Mode{gateway.ModeSearch, gateway.ModeCode} {
		t.Run(string(mode), func(t *testing.T) {
			r := modeRig(t, mode, (&fakeLua{ended: make(chan error, 1)}).run)
			for _, client := range []string{"agent", "direct"} {
				assert.Contains(t, []string{"public", "private"}, scope(t, connectAs(t, r.streamable("/mcp"), client)), client)
			}
		})
	}
	t.Run("search without pinned tools", func(t *testing.T) {
		r := newRigWith(t, map[string]manager.Spec{"demo": {Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: demo.NewServer()}}},
			gateway.Options{Mode: gateway.ModeSearch}, gateway.HTTPOptions{})
		r.wait("demo")
		assert.Contains(t, []string{"public", "private"}, scope(t, connectAs(t, r.streamable("/mcp"), "agent")))
	})
}
