package luaapi

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Builtins that run as one Go call ignore the slice budget (measured:
// string.rep("x", 1e9) took 1.6 s and 1 GiB), so the sandbox caps them.
// The pattern functions are the sandbox's own (patterns.go): their
// matcher polls the slice's context, so the budget bounds their time and
// only their sizes are capped here.
const (
	maxRepBytes     = 16 << 20 // string.rep result
	maxSubjectBytes = 1 << 20  // subject of find/match/gmatch/gsub
	maxPatternBytes = 4 << 10
	// maxResults bounds the values one call of unpack or string.byte
	// returns, as standard Lua's stack does (8000): gopher-lua grows its
	// value stack a few slots at a time, so unpack({}, 1, 1e8) took
	// minutes before failing.
	maxResults = 8000
)

// capBuiltins wraps string.rep with a size check and replaces the pattern
// functions with interruptible ones.
func capBuiltins(L *lua.LState) {
	str, ok := L.GetGlobal("string").(*lua.LTable)
	if !ok {
		return
	}
	rep := str.RawGetString("rep").(*lua.LFunction)
	str.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		n := L.CheckInt(2)
		if size := int64(len(s)) * int64(max(n, 0)); size > maxRepBytes {
			L.RaiseError("string.rep: the result would be %d bytes; the limit is %d MiB", size, maxRepBytes>>20)
		} else {
			reserve(L, "string.rep", int(size))
		}
		return callThrough(L, rep)
	}))
	byteFn := str.RawGetString("byte").(*lua.LFunction)
	str.RawSetString("byte", L.NewFunction(func(L *lua.LState) int {
		checkResults(L, "string.byte", byteCount(L))
		return callThrough(L, byteFn)
	}))
	if unpack, ok := L.GetGlobal("unpack").(*lua.LFunction); ok {
		L.SetGlobal("unpack", L.NewFunction(func(L *lua.LState) int {
			t := L.CheckTable(1)
			checkResults(L, "unpack", L.OptInt(3, t.Len())-L.OptInt(2, 1)+1)
			return callThrough(L, unpack)
		}))
	}
	str.RawSetString("find", L.NewFunction(strFind))
	str.RawSetString("match", L.NewFunction(strMatch))
	gmatch := L.NewFunction(strGmatch)
	str.RawSetString("gmatch", gmatch)
	str.RawSetString("gfind", gmatch) // gopher-lua's alias, which kept its own gmatch
	str.RawSetString("gsub", L.NewFunction(strGsub))
}

// checkResults raises the error of a builtin asked for n values, over
// maxResults.
func checkResults(L *lua.LState, what string, n int) {
	if n > maxResults {
		L.RaiseError("%s: %d values asked for; at most %d can be returned at once, take a range (unpack(t, i, j), s:byte(i, j))", what, n, maxResults)
	}
}

// byteCount is how many values string.byte(s, i, j) returns, by
// gopher-lua's rules: with s alone, every byte.
func byteCount(L *lua.LState) int {
	n := len(L.CheckString(1))
	i, j := L.OptInt(2, 1), L.OptInt(3, -1)
	if L.GetTop() == 2 {
		return 1
	}
	if i < 0 {
		i = n + i + 1
	}
	if j < 0 {
		j = n + j + 1
	}
	return min(j, n) - max(i, 1) + 1
}

// checkPattern reports why a subject or pattern is too large, or "". The
// time a match takes is bounded by the slice budget instead: the count of
// repetition items once capped here was a poor proxy for it (5 items
// against 81 bytes took 16 s, while harmless patterns with 13 were
// refused).
func checkPattern(subject, pattern string) string {
	switch {
	case len(subject) > maxSubjectBytes:
		return fmt.Sprintf("the subject is %d bytes; the limit is %d MiB", len(subject), maxSubjectBytes>>20)
	case len(pattern) > maxPatternBytes:
		return fmt.Sprintf("the pattern is %d bytes; the limit is %d KiB", len(pattern), maxPatternBytes>>10)
	}
	return ""
}

// callThrough calls the original builtin with this call's arguments.
func callThrough(L *lua.LState, fn *lua.LFunction) int {
	n := L.GetTop()
	base := n
	L.Push(fn)
	for i := 1; i <= n; i++ {
		L.Push(L.Get(i))
	}
	L.Call(n, lua.MultRet)
	return L.GetTop() - base
}
