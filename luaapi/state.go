package luaapi

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// newState builds the sandboxed Lua state: libraries by allowlist (base
// without dofile/loadfile/load, table, string, math, coroutine, package for
// require from scriptDir, and a safe os), never io or debug.
func newState(scriptDir string) *lua.LState {
	// Every task is a thread made with these options: start small and grow
	// (a full-size registry and call stack per hook run cost ~110 KB).
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       256,
		MinimizeStackMemory: true,
		RegistrySize:        256,
		RegistryGrowStep:    256,
		RegistryMaxSize:     1 << 20,
	})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
		{lua.OsLibName, lua.OpenOs},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range []string{"dofile", "loadfile", "load", "loadstring", "module"} {
		L.SetGlobal(name, unavailable(L, name))
	}
	if os, ok := L.GetGlobal("os").(*lua.LTable); ok {
		for _, name := range []string{"exit", "execute", "remove", "rename", "tmpname", "setlocale", "setenv"} {
			os.RawSetString(name, unavailable(L, "os."+name))
		}
	}
	capBuiltins(L)
	sizeBuiltins(L)
	capCoroutines(L)
	capProtectedCalls(L)
	if pkg, ok := L.GetGlobal("package").(*lua.LTable); ok {
		pkg.RawSetString("path", lua.LString(filepath.Join(scriptDir, "?.lua")))
		pkg.RawSetString("cpath", lua.LString(""))
	}
	return L
}

// luaPrint is print writing to w: arguments tostring'd, tab-separated.
func luaPrint(w io.Writer) lua.LGFunction {
	return func(L *lua.LState) int {
		n := L.GetTop()
		parts := make([]string, n)
		for i := 1; i <= n; i++ {
			parts[i-1] = L.ToStringMeta(L.Get(i)).String()
		}
		fmt.Fprintln(w, strings.Join(parts, "\t"))
		return 0
	}
}

// unavailable stands in for a function the sandbox leaves out, so calling
// it says why instead of "attempt to call a nil value".
func unavailable(L *lua.LState, name string) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s is not available in mcpvisor's Lua sandbox (use require for modules in scripts/; Ctrl-D leaves the REPL)", name)
		return 0
	})
}
