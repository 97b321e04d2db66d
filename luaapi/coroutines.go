package luaapi

import (
	"strings"
	"sync"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// maxCoroutineNesting bounds coroutines resumed inside one another. Each
// level nests the Lua VM once more on the Go stack, and a chunk that
// recursed through coroutine.wrap ran until the Go runtime died of a stack
// overflow, which nothing can recover from; legitimate code nests a few
// levels.
const maxCoroutineNesting = 200

// maxProtectedNesting bounds pcall and xpcall calls inside one another.
// gopher-lua fails with an internal index error when its call stack
// overflows inside a protected call, so the nesting is refused first, with
// an error that names the limit and that the enclosing pcall catches.
const maxProtectedNesting = 64

// capProtectedCalls counts nested pcall and xpcall calls.
func capProtectedCalls(L *lua.LState) {
	depth := 0
	for _, name := range []string{"pcall", "xpcall"} {
		orig, ok := L.GetGlobal(name).(*lua.LFunction)
		if !ok {
			continue
		}
		L.SetGlobal(name, L.NewFunction(func(L *lua.LState) int {
			if depth >= maxProtectedNesting {
				L.RaiseError("%s nested deeper than %d; the limit stops runaway recursion", name, maxProtectedNesting)
			}
			depth++
			defer func() { depth-- }()
			return callThrough(L, orig)
		}))
	}
}

// capCoroutines makes coroutine.resume count how deeply resumes are
// nested and refuse to go past maxCoroutineNesting with a Lua error naming
// the limit; coroutine.wrap is rebuilt on that resume so it is counted
// too. The count lives in the closure: only the loop goroutine runs Lua.
func capCoroutines(L *lua.LState) {
	co, ok := L.GetGlobal("coroutine").(*lua.LTable)
	if !ok {
		return
	}
	resume := co.RawGetString("resume").(*lua.LFunction)
	depth := 0
	co.RawSetString("resume", L.NewFunction(func(L *lua.LState) int {
		if depth >= maxCoroutineNesting {
			L.RaiseError("coroutines nested deeper than %d (a coroutine resumed inside %d others); the limit stops runaway recursion", maxCoroutineNesting, depth)
		}
		depth++
		defer func() { depth-- }()
		return callThrough(L, resume)
	}))
	L.Push(L.NewFunctionFromProto(coroutineWrapProto()))
	L.Call(0, 1)
	co.RawSetString("wrap", L.Get(-1))
	L.Pop(1)
}

// coroutineWrapProto is coroutineWrap compiled once, shared by every
// state as the task bootstrap is: compiling it was 40 % of making a state,
// which run_lua does for every run.
var coroutineWrapProto = sync.OnceValue(func() *lua.FunctionProto {
	chunk, err := parse.Parse(strings.NewReader(coroutineWrap), "(coroutine.wrap)")
	if err != nil {
		panic(err) // a constant chunk
	}
	proto, err := lua.Compile(chunk, "(coroutine.wrap)")
	if err != nil {
		panic(err)
	}
	return proto
})

// coroutineWrap is coroutine.wrap over the counted coroutine.resume, with
// the standard behaviour: an error inside propagates to the caller.
var coroutineWrap = strings.TrimSpace(`
local create, resume, error = coroutine.create, coroutine.resume, error
local function pass(ok, ...)
  if not ok then error((...), 0) end
  return ...
end
return function(f)
  local co = create(f)
  return function(...) return pass(resume(co, ...)) end
end
`)
