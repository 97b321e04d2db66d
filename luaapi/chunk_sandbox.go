package luaapi

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// newChunkState builds the sandbox of one run: the control plane's state
// (its caps on large values, patterns, coroutines and pcall nesting) less
// what reaches outside it or loads code other than the chunk, plus the
// run's own print, tools and helpers.
func newChunkState(c *chunkRun) *lua.LState {
	L := newState("")
	for _, name := range []string{"io", "os", "debug", "package"} {
		L.SetGlobal(name, missingLibrary(c, L, name))
	}
	for _, name := range []string{"require", "module", "dofile", "loadfile", "load", "loadstring", "collectgarbage"} {
		L.SetGlobal(name, missingFunction(c, L, name))
	}
	if str, ok := L.GetGlobal("string").(*lua.LTable); ok {
		str.RawSetString("dump", missingFunction(c, L, "string.dump"))
	}
	OpenJSON(L)
	L.SetGlobal("print", L.NewFunction(luaPrint(&c.out)))
	c.installTools(L)
	return L
}

// unavailableWhy ends the message of everything the sandbox leaves out.
const unavailableWhy = "is not available in run_lua: the chunk reaches nothing outside it but tools.<server>.<tool>{…}, and loads no other code"

// missingFunction stands in for a function the sandbox leaves out.
func missingFunction(c *chunkRun, L *lua.LState, name string) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		c.raise(L, ChunkUnavailable, "%s %s", name, unavailableWhy)
		return 0
	})
}

// missingLibrary stands in for a library the sandbox leaves out: a table
// whose every field (io.open, os.getenv, debug.getinfo) raises saying so.
func missingLibrary(c *chunkRun, L *lua.LState, name string) *lua.LTable {
	lib := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		c.raise(L, ChunkUnavailable, "%s.%s: the %s library %s", name, lua.LVAsString(L.Get(2)), name, unavailableWhy)
		return 0
	}))
	lib.Metatable = mt
	return lib
}

// raise raises a Lua error at the calling line, remembering what it
// means: if it ends the run, the run's error has that code.
func (c *chunkRun) raise(L *lua.LState, code ChunkCode, format string, args ...any) {
	msg := luaCaller(L) + fmt.Sprintf(format, args...)
	c.faults[msg] = code
	L.Error(lua.LString(msg), 0)
}

// luaCaller is "chunk:line: " of the Lua code that called the running
// builtin, through Go frames such as pcall's, or "".
func luaCaller(L *lua.LState) string {
	for level := 1; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return ""
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			return ""
		}
		if dbg.What != "G" && dbg.CurrentLine > 0 {
			return fmt.Sprintf("%s:%d: ", dbg.Source, dbg.CurrentLine)
		}
	}
}
