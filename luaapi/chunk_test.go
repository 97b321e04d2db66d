package luaapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/luaapi"
)

// fakeTools is the gateway side of a chunk: a few tools on two servers,
// served by Go functions, and a record of every call the chunk made.
type fakeTools struct {
	mu    sync.Mutex
	calls []fakeCall // guarded by mu
	// block, when set, is closed by the slow tool once it has started.
	started chan struct{}
	// seen receives the context error a slow tool saw when its call ended.
	seen chan error
}

type fakeCall struct {
	name string
	args map[string]any
}

func newFakeTools() *fakeTools {
	return &fakeTools{started: make(chan struct{}, 1), seen: make(chan error, 1)}
}

// env is what RunChunk gets: every tool but secret, which the backend has
// and the chunk must not reach.
func (f *fakeTools) env() luaapi.ChunkEnv {
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}`)
	tools := []luaapi.ChunkTool{
		{Name: "demo__add", Server: "demo", Tool: "add", Description: "Add two numbers", InputSchema: schema},
		{Name: "demo__echo", Server: "demo", Tool: "echo", Description: "Echo text back"},
		{Name: "demo__fail", Server: "demo", Tool: "fail", Description: "Always fails"},
		{Name: "demo__slow", Server: "demo", Tool: "slow", Description: "Waits until cancelled"},
		{Name: "files__list", Server: "files", Tool: "list", Description: "List files"},
		{Name: "files__delete", Server: "files", Tool: "delete", Description: "Delete a file by id"},
	}
	return luaapi.ChunkEnv{
		Tools: tools,
		Call:  f.call,
		Search: func(query string, limit int, server string) []luaapi.ChunkHit {
			var hits []luaapi.ChunkHit
			for _, t := range tools {
				if (server == "" || t.Server == server) && strings.Contains(strings.ToLower(t.Description), strings.ToLower(query)) {
					hits = append(hits, luaapi.ChunkHit{Name: t.Name, Server: t.Server, Description: t.Description, Why: "description"})
				}
			}
			return hits[:min(limit, len(hits))]
		},
	}
}

func (f *fakeTools) call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	f.mu.Lock()
	f.calls = append(f.calls, fakeCall{name, args})
	f.mu.Unlock()
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	switch name {
	case "demo__add":
		a, _ := args["a"].(int64)
		b, _ := args["b"].(int64)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(a + b)}}, StructuredContent: map[string]any{"sum": a + b}}, nil
	case "demo__echo":
		return text(fmt.Sprint(args["text"])), nil
	case "demo__fail":
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the disk is full"}}}, nil
	case "demo__slow":
		f.started <- struct{}{}
		<-ctx.Done()
		f.seen <- ctx.Err()
		return nil, ctx.Err()
	case "files__list":
		return &mcp.CallToolResult{StructuredContent: map[string]any{"files": []any{
			map[string]any{"id": "f1", "name": "notes.txt", "size": 10},
			map[string]any{"id": "f2", "name": "core.dump", "size": 1 << 30},
			map[string]any{"id": "f3", "name": "todo.md", "size": 20},
		}}}, nil
	case "files__delete":
		return text("deleted " + fmt.Sprint(args["id"])), nil
	case "files__secret":
		return text("the secret"), nil
	}
	return nil, fmt.Errorf("no tool %s", name)
}

func (f *fakeTools) callNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, c := range f.calls {
		names = append(names, c.name)
	}
	return names
}

// calm are limits whose CPU budget a chunk that means no harm never
// reaches, even on a loaded machine or under the race detector: the
// budget is measured in wall time.
var calm = luaapi.ChunkLimits{SliceBudget: time.Minute}

// runOK runs code and returns the text of its result, failing the test if
// it is an error.
func runOK(t *testing.T, env luaapi.ChunkEnv, code string) string {
	t.Helper()
	res, err := luaapi.RunChunk(t.Context(), code, env, calm)
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	text := res.Content[0].(*mcp.TextContent).Text
	require.False(t, res.IsError, "the chunk failed: %s", text)
	return text
}

// A chunk lists, picks from the listing and acts on its pick: three
// dependent calls in one run, what a model would otherwise need three
// round trips for.
func TestChunkComposesDependentCalls(t *testing.T) {
	f := newFakeTools()
	out := runOK(t, f.env(), `
		local listing = tools.files.list{}
		local biggest
		for _, file in ipairs(listing.files) do
			if not biggest or file.size > biggest.size then biggest = file end
		end
		print("deleting " .. biggest.name)
		return tools.files.delete{id = biggest.id}`)
	require.Equal(t, "deleting core.dump\ndeleted f2", out)
	require.Equal(t, []string{"files__list", "files__delete"}, f.callNames())
	require.Equal(t, map[string]any{"id": "f2"}, f.calls[1].args)
}

// Structured results come back as tables, others as their text; a
// returned table comes back as JSON.
func TestChunkResultsAndReturnedValues(t *testing.T) {
	f := newFakeTools()
	out := runOK(t, f.env(), `
		local a = tools.demo.add{a = 2, b = 3}
		local e = tools.demo.echo{text = "seen"}
		return {sum = a.sum, echo = e}`)
	require.JSONEq(t, `{"sum": 5, "echo": "seen"}`, out)

	out = runOK(t, f.env(), `return call_tool("demo__echo", {text = "by name"}), 42, true`)
	require.Equal(t, "by name\n42\ntrue", out)

	out = runOK(t, f.env(), `local ok, err = pcall(tools.demo.fail, {}) return ok, err`)
	require.Contains(t, out, "false\nrun_lua:1: tools.demo.fail failed: the disk is full")
}

// search_tools and describe let a chunk find the tools it needs.
func TestChunkSearchAndDescribe(t *testing.T) {
	f := newFakeTools()
	out := runOK(t, f.env(), `
		local hits = search_tools("file", 1)
		local d = describe("demo.add")
		return hits[1].name, hits[1].tool, #hits, d.name, d.input_schema.properties.a.type, describe("demo__echo").description`)
	require.Equal(t, "files__list\nlist\n1\ndemo__add\nnumber\nEcho text back", out)
	out = runOK(t, f.env(), `return #search_tools("file", 10, "demo")`)
	require.Equal(t, "0", out)
	out = runOK(t, f.env(), `
		local names = {}
		for server, tools in pairs(tools) do
			for tool in pairs(tools) do names[#names + 1] = server .. "." .. tool end
		end
		table.sort(names)
		return table.concat(names, " ")`)
	require.Equal(t, "demo.add demo.echo demo.fail demo.slow files.delete files.list", out)
}

// Every failure is an error result that says what happened, after what
// the chunk printed before it.
func TestChunkFailureIsErrorResult(t *testing.T) {
	f := newFakeTools()
	res, err := luaapi.RunChunk(t.Context(), "print('before')\ntools.demo.fail{}", f.env(), calm)
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Equal(t, "before\nerror: run_lua:2: tools.demo.fail failed: the disk is full", res.Content[0].(*mcp.TextContent).Text)

	_, err = luaapi.RunChunkErr(t.Context(), "tools.demo.fail{}", f.env(), calm)
	requireChunkCode(t, err, luaapi.ChunkToolFailed)
	_, err = luaapi.RunChunkErr(t.Context(), "local x = ", f.env(), calm)
	requireChunkCode(t, err, luaapi.ChunkSyntax)
	_, err = luaapi.RunChunkErr(t.Context(), "local t = nil; return t.x", f.env(), calm)
	requireChunkCode(t, err, luaapi.ChunkRuntime)
}

func requireChunkCode(t *testing.T, err error, want luaapi.ChunkCode) *luaapi.ChunkError {
	t.Helper()
	var ce *luaapi.ChunkError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, want, ce.Code, "the run ended with: %v", err)
	return ce
}

// Output past the limit is cut, with a note saying how much was left
// out; a chunk printing without end still ends with its result.
func TestChunkOutputTruncated(t *testing.T) {
	f := newFakeTools()
	limits := calm
	limits.MaxOutput = 1000
	res, err := luaapi.RunChunk(t.Context(), `for i = 1, 10000 do print(string.rep("é", 10)) end return "done"`, f.env(), limits)
	require.NoError(t, err)
	require.False(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	kept, note, ok := strings.Cut(text, "\n[output truncated: ")
	require.True(t, ok, "no truncation note: %q", text[max(0, len(text)-200):])
	require.LessOrEqual(t, len(kept), 1000)
	require.True(t, strings.HasPrefix(kept, strings.Repeat("é", 10)+"\n"))
	require.NotContains(t, kept, "\uFFFD", "a character was split")
	require.Contains(t, note, fmt.Sprintf("%d more bytes left out", 10000*21+len("\ndone")-len(kept)))

	// So is a long error message.
	res, err = luaapi.RunChunk(t.Context(), `print("before") error(string.rep("x", 100000))`, f.env(), limits)
	require.NoError(t, err)
	require.True(t, res.IsError)
	text = res.Content[0].(*mcp.TextContent).Text
	require.Less(t, len(text), 1300)
	require.True(t, strings.HasPrefix(text, "before\nerror: run_lua:1: xxx"), text[:min(len(text), 40)])
	require.Contains(t, text, "[output truncated: ")

	// A large returned table is cut the same way.
	res, err = luaapi.RunChunk(t.Context(), `local t = {} for i = 1, 5000 do t[i] = i end return t`, f.env(), limits)
	require.NoError(t, err)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "[output truncated: ")
}

// Cancelling the caller's context stops the chunk and the call it is
// waiting for, and the run says it was cancelled.
func TestChunkCancelStopsCall(t *testing.T) {
	f := newFakeTools()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-f.started
		cancel()
	}()
	res, err := luaapi.RunChunk(ctx, `tools.demo.slow{} return "not reached"`, f.env(), calm)
	require.Nil(t, res)
	requireChunkCode(t, err, luaapi.ChunkCancelled)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, <-f.seen, context.Canceled, "the call in flight was not cancelled")
	runOK(t, f.env(), `return 1`)
}

// Cancelling stops a chunk busy in Lua too, before its budget would.
func TestChunkCancelStopsLua(t *testing.T) {
	f := newFakeTools()
	env := f.env()
	ctx, cancel := context.WithCancel(t.Context())
	call := env.Call
	env.Call = func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
		defer cancel() // once the chunk is past its call, it only loops
		return call(ctx, name, args)
	}
	_, err := luaapi.RunChunkErr(ctx, `tools.demo.echo{text = "x"} while true do end`, env, luaapi.ChunkLimits{SliceBudget: 1 << 40})
	requireChunkCode(t, err, luaapi.ChunkCancelled)
	require.True(t, errors.Is(err, context.Canceled))
}

// run_lua's description tells a model the servers it can reach and the
// limits it works under, without the cost of listing every tool.
func TestRunLuaDescription(t *testing.T) {
	f := newFakeTools()
	d := luaapi.RunLuaDescription(f.env().Tools, luaapi.ChunkLimits{MaxCalls: 7})
	require.Contains(t, d, "Servers: demo (4 tools), files (2 tools).")
	require.Contains(t, d, "Limits per run: 7 tool calls, 1m0s, 100ms of Lua between two calls, 16384 bytes of output.")
	require.NotContains(t, d, "echo")
	require.Contains(t, luaapi.RunLuaDescription(nil, luaapi.ChunkLimits{}), "No tools are available now.")
}
