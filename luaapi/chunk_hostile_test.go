package luaapi_test

import (
	"context"
	"errors"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/luaapi"
)

// A chunk written to harm the host, or just wrong, is stopped with an
// error that says why, reaches nothing it was not given, and leaves the
// next chunk free to run. (The memory bomb gets a CPU budget it cannot
// exhaust, so that the memory limit is what stops it.)
func TestChunkHostile(t *testing.T) {
	f := newFakeTools()
	env := f.env()
	for _, tt := range []struct {
		name, code string
		limits     luaapi.ChunkLimits
		want       luaapi.ChunkCode
		says       string
	}{
		{name: "infinite loop", limits: cpuBudget, code: `while true do end`, want: luaapi.ChunkCPUBudget, says: "run_lua:1: the chunk ran Lua for 100ms without making a tool call"},
		{name: "infinite loop caught by pcall", limits: cpuBudget, code: `while true do pcall(function() while true do end end) end`, want: luaapi.ChunkCPUBudget},
		{name: "loop after a call", limits: cpuBudget, code: "tools.demo.echo{text = 'x'}\nlocal i = 0 while true do i = i + 1 end", want: luaapi.ChunkCPUBudget, says: "at run_lua:2"},
		{name: "memory bomb", code: `local s = "x" for i = 1, 40 do s = s .. s end return #s`, limits: luaapi.ChunkLimits{MemoryLimit: heldNow() + 64<<20, SliceBudget: time.Minute}, want: luaapi.ChunkMemory, says: "the memory limit of Lua code"},
		{name: "10,000 tool calls", code: `for i = 1, 10000 do tools.demo.add{a = i, b = 1} end`, want: luaapi.ChunkCallCap, says: "more than 100 tool calls (the limit per run)"},
		{name: "10,000 tool calls caught by pcall", code: `for i = 1, 10000 do pcall(tools.demo.add, {a = i, b = 1}) end return "finished"`, want: luaapi.ChunkCallCap},
		{name: "a tool not given", code: `return tools.files.secret{}`, want: luaapi.ChunkUnknownTool, says: `server "files" has no tool "secret" you may call; its tools are: delete, list`},
		{name: "a server not given", code: `return tools.vault.read{}`, want: luaapi.ChunkUnknownTool, says: "the servers are: demo, files"},
		{name: "a tool not given, by name", code: `return call_tool("files__secret", {})`, want: luaapi.ChunkUnknownTool},
		{name: "a typo", code: `return tools.demo.ad{}`, want: luaapi.ChunkUnknownTool, says: "did you mean add?"},
		{name: "endless recursion", code: `local function f() return 1 + f() end return f()`, want: luaapi.ChunkRuntime, says: "stack overflow"},
		{name: "a hundred million values", code: `return unpack({}, 1, 1e8)`, want: luaapi.ChunkRuntime, says: "at most 8000 can be returned at once"},
		{name: "a huge chunk", code: "return " + strings.Repeat("{", 300000) + strings.Repeat("}", 300000), want: luaapi.ChunkTooLarge, says: "the chunk is 600007 bytes; the limit is 128 KiB"},
		{name: "require", code: `local m = require("os")`, want: luaapi.ChunkUnavailable, says: "require is not available in run_lua"},
		{name: "debug", code: `return debug.getinfo(1)`, want: luaapi.ChunkUnavailable, says: "debug.getinfo: the debug library is not available"},
		{name: "load of bytecode", code: `return load(string.dump(function() return 1 end))()`, want: luaapi.ChunkUnavailable, says: "string.dump is not available"},
		{name: "load of source", code: `return load("return 1")()`, want: luaapi.ChunkUnavailable, says: "load is not available"},
		{name: "io.open", code: `return io.open("/etc/passwd"):read("*a")`, want: luaapi.ChunkUnavailable, says: "io.open: the io library is not available"},
		{name: "os.execute", code: `return os.execute("id")`, want: luaapi.ChunkUnavailable},
		{name: "a tostring that loops", limits: cpuBudget, code: `print(setmetatable({}, {__tostring = function() while true do end end}))`, want: luaapi.ChunkCPUBudget},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.callNames())
			if tt.limits == (luaapi.ChunkLimits{}) {
				tt.limits = calm
			}
			_, err := luaapi.RunChunkErr(t.Context(), tt.code, env, tt.limits)
			ce := requireChunkCode(t, err, tt.want)
			require.Contains(t, ce.Message, tt.says)

			calls := f.callNames()[before:]
			require.NotContains(t, calls, "files__secret", "a tool the chunk was not given was called")
			if tt.want == luaapi.ChunkCallCap {
				require.Len(t, calls, 100, "the run makes the calls it may, and no more")
			}
			require.Equal(t, `{"sum":3}`, runOK(t, env, `return tools.demo.add{a = 1, b = 2}`), "the next chunk")
		})
	}
}

// cpuBudget are the limits with the default CPU budget, the one that
// stops loops. The other cases run calm: it is measured in wall time, and
// a loaded machine could make it stop them first.
var cpuBudget = luaapi.ChunkLimits{SliceBudget: 100 * time.Millisecond}

// heldNow is the memory the host holds now, as the memory limit counts
// it, after a collection.
func heldNow() int64 {
	debug.FreeOSMemory()
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// A run that waits on a call past its time limit is stopped, the call
// with it.
func TestChunkTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeTools()
		start := time.Now()
		_, err := luaapi.RunChunkErr(t.Context(), `print("waiting") tools.demo.slow{}`, f.env(), luaapi.ChunkLimits{Timeout: 5 * time.Second, MemoryLimit: -1})
		ce := requireChunkCode(t, err, luaapi.ChunkTimeout)
		require.Contains(t, ce.Message, "the run took longer than 5s")
		require.Equal(t, 5*time.Second, time.Since(start))
		require.ErrorIs(t, <-f.seen, context.DeadlineExceeded, "the call in flight was not stopped")
	})
}

// The time a chunk waits for its calls is not Lua's: a chunk whose calls
// take longer than the slice budget runs to its end.
func TestChunkBudgetIsLuaTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeTools()
		env := f.env()
		env.Call = func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
			time.Sleep(time.Second)
			return f.call(ctx, name, args)
		}
		out, err := luaapi.RunChunkErr(t.Context(), `local n = 0 for i = 1, 3 do n = n + tools.demo.add{a = i, b = 0}.sum end return n`, env, luaapi.ChunkLimits{MemoryLimit: -1})
		require.NoError(t, err)
		require.Equal(t, "6", out)
		require.True(t, slices.Equal([]string{"demo__add", "demo__add", "demo__add"}, f.callNames()))
	})
}

// Whatever code a client sends, a run ends with an answer: never a Go
// panic of the sandbox, never more text than the limit and its note.
func FuzzRunChunk(f *testing.F) {
	for _, seed := range []string{
		`return tools.demo.add{a = 1, b = 2}`,
		`local t = search_tools("file") return describe(t[1].name)`,
		`print(pcall(tools.demo.fail, {})) return call_tool("demo__echo", {text = "x"})`,
		`for i = 1, 200 do pcall(tools.demo.echo, {text = i}) end`,
		`return setmetatable({}, {__index = function(t, k) return tools[k] end}).demo.echo{text = 1}`,
		`coroutine.wrap(function() print(tools.demo.echo{text = "in a coroutine"}) end)()`,
		`return io.open`, `x = `, `return ("x"):rep(1e6):gsub("x", "%0%0")`,
	} {
		f.Add(seed)
	}
	env := newFakeTools().env()
	call := env.Call
	env.Call = func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
		if name == "demo__slow" {
			return nil, context.Canceled // the fuzzer has nobody to cancel it
		}
		return call(ctx, name, args)
	}
	limits := luaapi.ChunkLimits{SliceBudget: 50 * time.Millisecond, Timeout: 5 * time.Second, MaxOutput: 4096}
	f.Fuzz(func(t *testing.T, code string) {
		out, err := luaapi.RunChunkErr(context.Background(), code, env, limits)
		var ce *luaapi.ChunkError
		if errors.As(err, &ce) {
			require.NotEqual(t, luaapi.ChunkInternal, ce.Code, "%v", err)
		}
		require.LessOrEqual(t, len(out), 4096+200)
	})
}
