package luaapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// completeRuntime is a runtime with two demo servers, "demo" and "dev",
// and a few globals to complete fields of.
func completeRuntime(t *testing.T) *testRuntime {
	t.Helper()
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	r.addDemo(t, "dev")
	r.run(t, `
		greeting = "hi"
		zeta_one, zeta_two = 1, 2
		obj = setmetatable({x = 1, ["not a name"] = 2, [3] = 3},
			{__index = setmetatable({greet = function() end, label = "obj"},
				{__index = {base_method = function() end}})})
		big = {}
		for i = 1, 300 do big[string.format("f%03d", i)] = i end`)
	return r
}

func TestComplete(t *testing.T) {
	r := completeRuntime(t)
	demoTools := []string{"mo.add", "mo.echo", "mo.fail", "mo.sleep", "v.add", "v.echo", "v.fail", "v.sleep"}
	tests := []struct {
		name   string
		line   string
		pos    int // 0: end of line
		want   []string
		length int
	}{
		// Global names and keywords.
		{name: "global prefix", line: "mcp_st", want: []string{"atus"}, length: 6},
		{name: "several globals", line: "zeta_", want: []string{"one", "two"}, length: 5},
		{name: "global after code", line: `local ok = mcp_wa`, want: []string{"it"}, length: 6},
		{name: "keyword", line: "local f = fun", want: []string{"ction"}, length: 3},
		{name: "exact match offers the empty suffix", line: "print", want: []string{""}, length: 5},
		{name: "after concatenation", line: `x = "a" .. pri`, want: []string{"nt"}, length: 3},
		{name: "no match", line: "zzz_nope", want: nil, length: 8},
		{name: "cursor mid-line", line: "mcp_st()", pos: 6, want: []string{"atus"}, length: 6},
		{name: "cursor counts runes", line: `s = "héé" .. mcp_st`, want: []string{"atus"}, length: 6},

		// Fields of tables reached by a path.
		{name: "module field", line: "json.enc", want: []string{"ode"}, length: 3},
		{name: "library field", line: "x = string.fo", want: []string{"rmat"}, length: 2},
		{name: "every field", line: "json.", want: []string{"array_mt", "decode", "encode", "null", "object_mt"}, length: 0},
		{name: "mcp module", line: "mcp.wa", want: []string{"it"}, length: 2},
		{name: "fields through __index tables, names only", line: "obj.", want: []string{"base_method", "greet", "label", "x"}, length: 0},
		{name: "unknown table", line: "nosuch.x", want: nil, length: 1},
		{name: "field of a non-table", line: "greeting.x", want: nil, length: 1},

		// Methods after a colon.
		{name: "colon lists only functions", line: "obj:", want: []string{"base_method", "greet"}, length: 0},
		{name: "string methods", line: "greeting:up", want: []string{"per"}, length: 2},
		{name: "colon then dot is no path", line: "obj:greet.x", want: nil, length: 0},

		// Names inside the first string argument.
		{name: "tool names", line: `mcp_call("de`, want: demoTools, length: 2},
		{name: "tool name narrowed", line: `local res = mcp_call("demo.e`, want: []string{"cho"}, length: 6},
		{name: "single quotes and spaces", line: `mcp_call ( 'dev.s`, want: []string{"leep"}, length: 5},
		{name: "string call form", line: `mcp_call "demo.f`, want: []string{"ail"}, length: 6},
		{name: "module form", line: `mcp.call("demo.a`, want: []string{"dd"}, length: 6},
		{name: "mcp_call_cb", line: `mcp_call_cb("dev.`, want: []string{"add", "echo", "fail", "sleep"}, length: 4},
		{name: "prompt names", line: `mcp_prompt("d`, want: []string{"emo.greet", "ev.greet"}, length: 1},
		{name: "server names in mcp_status", line: `mcp_status("`, want: []string{"demo", "dev"}, length: 0},
		{name: "server names in mcp_wait", line: `mcp_wait("dem`, want: []string{"o"}, length: 3},
		{name: "server names in mcp_remove", line: `mcp_remove("dev`, want: []string{""}, length: 3},
		{name: "server names in mcp_tools", line: `for _, t in ipairs(mcp_tools("de`, want: []string{"mo", "v"}, length: 2},

		// Nothing.
		{name: "empty line", line: "", want: nil, length: 0},
		{name: "after a space", line: "x = ", want: nil, length: 0},
		{name: "after a closed string", line: `mcp_call("demo.echo")`, want: nil, length: 0},
		{name: "second argument", line: `mcp_call("demo.echo", `, want: nil, length: 0},
		{name: "string in the second argument", line: `mcp_call("demo.echo", {text = "de`, want: nil, length: 0},
		{name: "string of another function", line: `print("mcp_st`, want: nil, length: 0},
		{name: "a field named like mcp_call", line: `t.mcp_call("de`, want: nil, length: 0},
		{name: "escape in the string", line: `mcp_call("de\`, want: nil, length: 0},
		{name: "comment", line: `x = 1 -- mcp_st`, want: nil, length: 0},
		{name: "long string", line: `s = [==[ mcp_st`, want: nil, length: 0},
		{name: "after a closed long string", line: `s = [[ a ]] .. mcp_st`, want: []string{"atus"}, length: 6},
		{name: "number", line: "x = 1.5", want: nil, length: 0},
		{name: "field of a call's result", line: "f().x", want: nil, length: 0},
		{name: "field of an index", line: "t[1].x", want: nil, length: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pos := tt.pos
			if pos == 0 {
				pos = len([]rune(tt.line))
			}
			got, length := r.Complete(t.Context(), tt.line, pos)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.length, length)
		})
	}
}

func TestCompleteCapsCandidates(t *testing.T) {
	r := completeRuntime(t)
	got, length := r.Complete(t.Context(), "big.f", 5)
	require.Equal(t, 1, length)
	require.Len(t, got, 200)
	require.Equal(t, "001", got[0])
	require.Equal(t, "200", got[199])
}

func TestCompleteOutOfRangePos(t *testing.T) {
	r := newTestRuntime(t, nil)
	got, length := r.Complete(t.Context(), "mcp_st", 99)
	require.Equal(t, []string{"atus"}, got)
	require.Equal(t, 6, length)
	got, length = r.Complete(t.Context(), "mcp_st", -1)
	require.Nil(t, got)
	require.Zero(t, length)
}

// Completion waits for the loop; a loop busy running a chunk makes it give
// up when its context ends instead of blocking the line editor.
func TestCompleteBoundedByContext(t *testing.T) {
	r := newTestRuntime(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	got, _ := r.Complete(ctx, "mcp_st", 6)
	require.Nil(t, got)

	// A chunk that keeps the loop busy (no suspension) until it is
	// cancelled.
	busy, stopBusy := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := r.Exec(busy, `while true do end`, "busy")
		done <- err
	}()
	// Once the chunk holds the loop, completion can only time out.
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		defer cancel()
		got, _ := r.Complete(ctx, "mcp_st", 6)
		return got == nil
	}, 10*time.Second, time.Millisecond, "the busy chunk never started")
	stopBusy()
	require.Error(t, <-done)
	got, _ = r.Complete(t.Context(), "mcp_st", 6)
	require.Equal(t, []string{"atus"}, got)
}

func TestCompleteAfterClose(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.Close()
	got, length := r.Complete(t.Context(), "mcp_st", 6)
	require.Nil(t, got)
	require.Equal(t, 6, length)
}

// A server names its tools and prompts as it likes; the completion list
// the line editor shows never holds what a terminal would act on or hide.
// (The manager refuses such names outright; completion escapes whatever
// reaches it as a second line of defence.)
func TestCompleteEscapesServerNames(t *testing.T) {
	r := newTestRuntime(t, namedToolsDial(t, "ok", "set\x1b]0;PWNED\x07title", "admin\u202egnp", "git\u200bhub"))
	r.run(t, `mcp_add("evil", {command = {"evil"}}) assert(mcp_wait("evil", "connected"))`)
	got, length := r.Complete(t.Context(), `mcp_call("evil.`, len(`mcp_call("evil.`))
	require.Equal(t, []string{"ok"}, got)
	require.Equal(t, 5, length)
	got, _ = r.Complete(t.Context(), `mcp_prompt("evil.`, len(`mcp_prompt("evil.`))
	require.Equal(t, []string{"ok"}, got)
}

// namedToolsDial connects every server to an in-memory one that offers a
// tool and a prompt under each of names.
func namedToolsDial(t testing.TB, names ...string) manager.DialFunc {
	return inMemoryDial(t, func() *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "named", Version: "v0"}, nil)
		for _, n := range names {
			srv.AddTool(&mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{}, nil
				})
			srv.AddPrompt(&mcp.Prompt{Name: n},
				func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
					return &mcp.GetPromptResult{}, nil
				})
		}
		return srv
	})
}
