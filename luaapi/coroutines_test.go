package luaapi_test

import (
	"runtime"
	"testing"

	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/stretchr/testify/require"
)

// Recursion through coroutines or protected calls ends as a Lua error that
// names the limit, and the host goes on; without the limits the first
// killed the process with a Go stack overflow and the second failed with
// an internal index error.
func TestRunawayNestingIsALuaError(t *testing.T) {
	r := newTestRuntime(t, nil)
	for _, tt := range []struct{ name, src, want string }{
		{"coroutine.wrap", `local function f() return coroutine.wrap(f)() end return f()`,
			"coroutines nested deeper than 200 (a coroutine resumed inside 200 others); the limit stops runaway recursion"},
		{"coroutine.resume", `local function f() local ok, e = coroutine.resume(coroutine.create(f)) if not ok then error(e, 0) end end f()`,
			"coroutines nested deeper than 200 (a coroutine resumed inside 200 others); the limit stops runaway recursion"},
		{"pcall", `local function f() local ok, e = pcall(f) if not ok then error(e, 0) end end f()`,
			"pcall nested deeper than 64; the limit stops runaway recursion"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			le := r.fail(t, tt.src)
			require.Contains(t, le.Message, tt.want)
		})
	}
	require.Equal(t, "alive", r.one(t, `local function f() pcall(f) end f() return "alive"`))
	// Coroutines and protected calls still behave as in Lua.
	require.Equal(t, "2\t20", r.one(t, `local w = coroutine.wrap(function(a) local b = coroutine.yield(a+1) return b*2 end) return w(1) .. "\t" .. w(10)`))
	require.Equal(t, "false\tboom", r.one(t, `local w = coroutine.wrap(function() error("boom", 0) end) local ok, e = pcall(w) return tostring(ok) .. "\t" .. e`))
	require.Equal(t, "handled: x", r.one(t, `local _, e = xpcall(function() error("x", 0) end, function(e) return "handled: " .. e end) return e`))
}

// A chunk that makes the heap grow past the memory limit (here a string
// doubled in a loop) is stopped with an error naming the limit, and the
// runtime goes on.
func TestChunkStoppedAtMemoryLimit(t *testing.T) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := int64(ms.HeapAlloc) + 64<<20
	r := newTestRuntime(t, nil, func(o *luaapi.Options) { o.MemoryLimit = limit })
	le := r.fail(t, `local s = "x" while true do s = s .. s end`)
	require.Contains(t, le.Message, "while this chunk ran (the memory limit of Lua code)")
	require.ErrorIs(t, le, luaapi.ErrMemoryLimit)
	require.Equal(t, "2", r.one(t, `return 1 + 1`))
}
