package luaapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// servers is a DialFunc that connects each attempt to a server built by
// newServer (by server name and attempt number, from 1) over in-memory
// transports; a nil server refuses the attempt. It keeps the server
// sessions so a test can end one, and closes them all when the test ends
// (after the runtime's manager, whose cleanup is registered later).
type servers struct {
	newServer func(name string, attempt int) *mcp.Server

	mu sync.Mutex
	// mu guards the following.
	attempts map[string]int
	sessions map[string][]*mcp.ServerSession
}

func newServers(t testing.TB, newServer func(name string, attempt int) *mcp.Server) *servers {
	s := &servers{newServer: newServer, attempts: map[string]int{}, sessions: map[string][]*mcp.ServerSession{}}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, list := range s.sessions {
			for _, ss := range list {
				_ = ss.Close()
				_ = ss.Wait()
			}
		}
	})
	return s
}

func (s *servers) dial(_ context.Context, name string, _ manager.Spec) (mcp.Transport, error) {
	s.mu.Lock()
	s.attempts[name]++
	n := s.attempts[name]
	s.mu.Unlock()
	srv := s.newServer(name, n)
	if srv == nil {
		return nil, fmt.Errorf("attempt %d refused by test", n)
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sessions[name] = append(s.sessions[name], ss)
	s.mu.Unlock()
	return ct, nil
}

// drop ends the newest session of server name from the server's side.
func (s *servers) drop(t testing.TB, name string) {
	t.Helper()
	s.mu.Lock()
	list := s.sessions[name]
	s.mu.Unlock()
	require.NotEmpty(t, list)
	require.NoError(t, list[len(list)-1].Close())
}

// recordingServer offers:
//   - search {query, limit?, tags?}: closed schema; answers with the raw
//     arguments it received;
//   - count {n}: n progress notifications when asked, then "counted n".
type recordingServer struct {
	*mcp.Server
	mu sync.Mutex
	// mu guards calls.
	calls []string // raw arguments of each tools/call that reached a tool
}

func newRecordingServer() *recordingServer {
	r := &recordingServer{Server: mcp.NewServer(&mcp.Implementation{Name: "rec", Version: "1"}, nil)}
	r.AddTool(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"query": {"type": "string"},
			"limit": {"type": "integer"},
			"tags":  {"type": "array", "items": {"type": "string"}},
			"opts":  {"type": "object", "properties": {"depth": {"type": "integer"}}}
		},
		"required": ["query"],
		"additionalProperties": false
	}`)}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw := string(req.Params.Arguments)
		r.mu.Lock()
		r.calls = append(r.calls, raw)
		r.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: raw}}}, nil
	})
	r.AddTool(&mcp.Tool{Name: "count", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			if token := req.Params.GetProgressToken(); token != nil {
				for i := 1; i <= in.N; i++ {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(in.N), Message: fmt.Sprintf("step %d", i),
					}); err != nil {
						return nil, err
					}
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("counted %d", in.N)}}}, nil
		})
	return r
}

func (r *recordingServer) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// recordingRuntime declares "rec", served by one recordingServer, and
// waits until it is connected.
func recordingRuntime(t *testing.T) (*testRuntime, *recordingServer) {
	t.Helper()
	rec := newRecordingServer()
	s := newServers(t, func(string, int) *mcp.Server { return rec.Server })
	r := newTestRuntime(t, s.dial)
	r.addDemo(t, "rec")
	return r, rec
}

// Arguments are checked against the tool's inputSchema before any RPC,
// and from Lua what Lua cannot express (an empty array, an integer) is
// shaped by that schema before it is sent.
func TestMcpCallArgumentsShapedBySchema(t *testing.T) {
	r, rec := recordingRuntime(t)
	tests := []struct {
		name, args, want string
	}{
		{"empty table where an array is wanted", `{query = "q", tags = {}}`, `{"query":"q","tags":[]}`},
		{"empty table marked as array", `{query = "q", tags = setmetatable({}, json.array_mt)}`, `{"query":"q","tags":[]}`},
		{"integral number", `{query = "q", limit = 3.0}`, `{"limit":3,"query":"q"}`},
		{"computed integer", `{query = "q", limit = 10 / 2}`, `{"limit":5,"query":"q"}`},
		{"nested object", `{query = "q", opts = {depth = 2}}`, `{"opts":{"depth":2},"query":"q"}`},
		{"empty table where an object is wanted", `{query = "q", opts = {}}`, `{"opts":{},"query":"q"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, r.one(t, `return mcp_call("rec.search", `+tt.args+`).text`))
		})
	}
	require.Len(t, rec.received(), len(tests))
}

// From Lua, a call whose arguments break the tool's inputSchema fails with
// INVALID_ARGUMENTS naming each violation's JSON path, and never reaches
// the server.
func TestMcpCallInvalidArguments(t *testing.T) {
	r, rec := recordingRuntime(t)
	tests := []struct {
		name, args, want string
	}{
		{"missing required", `{limit = 1}`, "invalid arguments: $.query: required property is missing"},
		{"wrong type", `{query = 42}`, "invalid arguments: $.query: must be string, got integer 42"},
		{"fraction for an integer", `{query = "q", limit = 1.5}`, "invalid arguments: $.limit: must be integer, got number 1.5"},
		{"array item", `{query = "q", tags = {"a", true}}`, "invalid arguments: $.tags[1]: must be string, got boolean true"},
		{"nested", `{query = "q", opts = {depth = "deep"}}`, `invalid arguments: $.opts.depth: must be integer, got string "deep"`},
		{"typo", `{query = "q", limti = 3}`, `invalid arguments: $.limti: unexpected property; did you mean "limit"?`},
		{"no arguments", `nil`, "invalid arguments: $.query: required property is missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, []string{"nil", "INVALID_ARGUMENTS", "rec", `tools/call "search"`,
				`server "rec": tools/call "search": ` + tt.want}, r.run(t, `
				local res, err = mcp_call("rec.search", `+tt.args+`)
				return res, err.code, err.server, err.operation, err.message`))
		})
	}
	require.Empty(t, rec.received(), "no invalid call reached the server")
}

// mcp_call's progress option: the Lua function gets every notification,
// in order, as {progress, total, message}.
func TestMcpCallProgress(t *testing.T) {
	r, _ := recordingRuntime(t)
	got := r.run(t, `
		local seen = {}
		local res = mcp_call("rec.count", {n = 5}, {progress = function(p)
			seen[#seen + 1] = string.format("%g/%g %s", p.progress, p.total, p.message)
		end})
		-- Each notification runs the function as its own task on the loop;
		-- they may still be queued when the call's result arrives.
		for _ = 1, 5000 do
			if #seen == 5 then break end
			sleep(0.001)
		end
		return res.text, table.concat(seen, ", ")`)
	require.Equal(t, []string{"counted 5", "1/5 step 1, 2/5 step 2, 3/5 step 3, 4/5 step 4, 5/5 step 5"}, got)

	// A failing progress function is reported, and the call is unharmed.
	sub := r.m.Bus().Subscribe(events.SubscribeOptions{QueueSize: 1024})
	defer sub.Close()
	require.Equal(t, "counted 2", r.one(t, `
		return mcp_call("rec.count", {n = 2}, {progress = function(p) error("boom " .. p.progress) end}).text`))
	for _, want := range []string{"boom 1", "boom 2"} {
		e := nextOf(t, sub, "hook_error")
		require.Equal(t, "mcp_call progress", e.Fields["hook"])
		require.Contains(t, e.Fields["error"], want)
	}

	le := r.fail(t, `mcp_call("rec.count", {n = 1}, {progress = 5})`)
	require.Contains(t, le.Message, "bad argument #3 to mcp_call (progress must be a function(p) receiving {progress, total, message})")
}

// mcp_tools marks tools of a server that is not connected unavailable;
// mcp_resources and mcp_prompts too.
func TestMcpToolsAvailable(t *testing.T) {
	s := newServers(t, func(_ string, attempt int) *mcp.Server {
		if attempt == 1 {
			return demo.NewServer()
		}
		return nil // the server never comes back
	})
	r := newTestRuntime(t, s.dial)
	r.run(t, `mcp_add("demo", {command = {"demo"}, backoff = {initial = "1h", max = "1h"}})
		assert(mcp_wait("demo", "connected"))`)
	availability := `
		local out = {}
		for _, t in ipairs(mcp_tools()) do out[#out + 1] = t.name .. "=" .. tostring(t.available) end
		out[#out + 1] = mcp_resources()[1].uri .. "=" .. tostring(mcp_resources()[1].available)
		out[#out + 1] = mcp_prompts()[1].name .. "=" .. tostring(mcp_prompts()[1].available)
		return table.concat(out, " ")`
	require.Equal(t, "demo.add=true demo.echo=true demo.fail=true demo.sleep=true demo://readme=true demo.greet=true", r.one(t, availability))

	s.drop(t, "demo")
	_, err := r.m.Wait(context.Background(), "demo", manager.StateBackoff)
	require.NoError(t, err)
	require.Equal(t, "demo.add=false demo.echo=false demo.fail=false demo.sleep=false demo://readme=false demo.greet=false", r.one(t, availability))

	require.Equal(t, "true", r.one(t, `mcp_remove("demo", {wait = true}) return #mcp_tools() == 0 and #mcp_resources() == 0 and #mcp_prompts() == 0`))
}

// mcp_discover returns (tools, errors by server): cached without force,
// re-listed with it; discovered_at moves only when forced.
func TestMcpDiscover(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	before := mustStatus(t, r.m, "demo").DiscoveredAt

	require.Equal(t, []string{"2", "4", "demo.add", "true", "nil", "true"}, r.run(t, `
		local n = select("#", mcp_discover())
		local tools, errs = mcp_discover()
		return n, #tools, tools[1].name, tools[1].available, next(errs), mcp.discover == mcp_discover`))
	require.Equal(t, before, mustStatus(t, r.m, "demo").DiscoveredAt, "the cache answered")

	same := `
		local a = mcp_discover()
		local b, errs = mcp_discover(%s)
		local names = {}
		for i, t in ipairs(b) do
			assert(t.name == a[i].name, t.name .. " ~= " .. a[i].name)
			names[#names + 1] = t.name
		end
		return #a == #b, next(errs), table.concat(names, " ")`
	for _, args := range []string{`"demo", {force = true}`, `{force = true}`, `"DEMO"`} {
		require.Equal(t, []string{"true", "nil", "demo.add demo.echo demo.fail demo.sleep"}, r.run(t, fmt.Sprintf(same, args)), args)
	}
	require.True(t, mustStatus(t, r.m, "demo").DiscoveredAt.After(before), "force refreshed discovered_at")

	require.Equal(t, []string{"nil", "SERVER_NOT_FOUND", "discover", "true"}, r.run(t, `
		local tools, err = mcp_discover("nope", {force = true})
		return tools, err.code, err.operation, err.message:find("known servers: demo", 1, true) ~= nil`))
}

// A forced discovery reports each server it could not refresh by name,
// next to the tools of those it could.
func TestMcpDiscoverErrorsByServer(t *testing.T) {
	s := newServers(t, func(name string, _ int) *mcp.Server {
		if name == "down" {
			return nil
		}
		return demo.NewServer()
	})
	r := newTestRuntime(t, s.dial)
	r.addDemo(t, "up")
	r.run(t, `mcp_add("down", {command = {"x"}, timeouts = {request = "100ms"}})`)
	require.Equal(t, []string{"4", "CONNECTION_FAILED", "down", "discover", "true", "nil"}, r.run(t, `
		local tools, errs = mcp_discover({force = true})
		local e = errs.down
		return #tools, e.code, e.server, e.operation, e.message:find("refused by test", 1, true) ~= nil, errs.up`))
}

// mcp_resources and mcp_read against the demo server.
func TestMcpResourcesAndRead(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	require.Equal(t, []string{"1", "demo://readme", "demo", "readme", "Demo server README", "text/plain", "false", "true", "1"}, r.run(t, `
		local list = mcp_resources()
		local res = list[1]
		return #list, res.uri, res.server, res.name, res.title, res.mime_type, res.template, res.available, #mcp_resources("demo")`))
	require.Equal(t, []string{"nil", "SERVER_NOT_FOUND"}, r.run(t, `
		local list, err = mcp_resources("nope")
		return list, err.code`))

	require.Equal(t, []string{demo.Readme, "demo://readme", "text/plain", demo.Readme}, r.run(t, `
		local res = mcp_read("demo://readme")
		return res.text, res.contents[1].uri, res.contents[1].mime_type, mcp_read("demo://readme", {server = "demo"}).text`))

	require.Equal(t, []string{"nil", "SERVER_NOT_FOUND", "nil", `resources/read "demo://nope"`, "true"}, r.run(t, `
		local res, err = mcp_read("demo://nope")
		return res, err.code, err.server, err.operation, err.message:find("pass {server = name}", 1, true) ~= nil`))
	require.Equal(t, []string{"INVOCATION_FAILED", "demo"}, r.run(t, `
		local _, err = mcp_read("demo://nope", {server = "demo"})
		return err.code, err.server`))

	r.addDemo(t, "copy")
	require.Equal(t, []string{"AMBIGUOUS_TOOL", "true", demo.Readme}, r.run(t, `
		local _, err = mcp_read("demo://readme")
		return err.code, err.message:find("copy, demo", 1, true) ~= nil, mcp_read("demo://readme", {server = "copy"}).text`))

	for src, want := range map[string]string{
		`mcp_read(42)`: "bad argument #1 to mcp_read (string expected, got number)",
		`mcp_read("demo://readme", {server = 1})`: "bad argument #2 to mcp_read (server must be a string, got number)",
		`mcp_read("demo://readme", "demo")`:       "bad argument #2 to mcp_read (options must be a table like {server = \"name\"})",
	} {
		require.Contains(t, r.fail(t, src).Message, want, src)
	}
}

// mcp_prompts and mcp_prompt against the demo server.
func TestMcpPromptsAndPrompt(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	require.Equal(t, []string{"1", "demo.greet", "demo", "greet", "Ask the model to greet someone.", "true", "name", "who to greet", "true"}, r.run(t, `
		local list = mcp_prompts("demo")
		local p = list[1]
		local a = p.arguments[1]
		return #list, p.name, p.server, p.prompt, p.description, p.available, a.name, a.description, a.required`))

	require.Equal(t, []string{"Say hello to Ada.", "Greet Ada", "1", "user", "Say hello to 42."}, r.run(t, `
		local res = mcp_prompt("demo.greet", {name = "Ada"})
		return res.text, res.description, #res.messages, res.messages[1].role, mcp_prompt("demo.greet", {name = 42}).text`))

	require.Equal(t, []string{"nil", "PROMPT_NOT_FOUND", "demo", `prompts/get "great"`,
		`server "demo": prompts/get "great": server has no prompt "great"; its prompts: greet`}, r.run(t, `
		local res, err = mcp_prompt("demo.great", {})
		return res, err.code, err.server, err.operation, err.message`))
	require.Equal(t, []string{"PROMPT_NOT_FOUND", `prompts/get: prompt names are "server.prompt", got "greet"`}, r.run(t, `
		local _, err = mcp_prompt("greet", {name = "x"})
		return err.code, err.message`))
	require.Equal(t, []string{"INVOCATION_FAILED", "true"}, r.run(t, `
		local _, err = mcp_prompt("demo.greet")
		return err.code, err.message:find('argument "name" is required', 1, true) ~= nil`))
	require.Equal(t, []string{"nil", "SERVER_NOT_FOUND"}, r.run(t, `
		local list, err = mcp_prompts("nope")
		return list, err.code`))

	le := r.fail(t, `mcp_prompt("demo.greet", "Ada")`)
	require.Contains(t, le.Message, `bad argument #2 to mcp_prompt (arguments must be a table of strings like {name = "Ada"})`)
}

// tools_changed reaches Lua with its added and removed names as lists.
func TestMcpEventsToolsChanged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "live", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	srv.AddTool(&mcp.Tool{Name: "alpha", InputSchema: schema}, noop)
	s := newServers(t, func(string, int) *mcp.Server { return srv })
	r := newTestRuntime(t, s.dial)
	r.addDemo(t, "live")
	sub := r.m.Bus().Subscribe(events.SubscribeOptions{QueueSize: 1024})
	defer sub.Close()

	srv.AddTool(&mcp.Tool{Name: "beta", InputSchema: schema}, noop)
	nextOf(t, sub, "tools_changed")
	require.Equal(t, []string{"beta", "0", "[]", "live.alpha live.beta"}, r.run(t, `
		local e
		for _, ev in ipairs(mcp_events(20)) do
			if ev.kind == "tools_changed" then e = ev end
		end
		local names = {}
		for _, t in ipairs(mcp_tools()) do names[#names + 1] = t.name end
		return table.concat(e.added, ","), #e.removed, json.encode(e.removed), table.concat(names, " ")`))
}

func mustStatus(t testing.TB, m *manager.Manager, name string) manager.Status {
	t.Helper()
	st, err := m.Status(name)
	require.NoError(t, err)
	return st
}

// nextOf returns the next event of kind on sub, failing t if none comes
// within 10s.
func nextOf(t testing.TB, sub *events.Subscription, kind events.Kind) events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		e, err := sub.Recv(ctx)
		require.NoError(t, err, "waiting for a %s event", kind)
		if e.Kind == kind {
			return e
		}
	}
}
