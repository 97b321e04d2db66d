package luaapi

import (
	"fmt"

	lua "github.com/yuin/gopher-lua"
)

// Builtins that run as one Go call ignore the slice budget (NOTES.md:
// string.rep("x", 1e9) took 1.6 s and 1 GiB), so the sandbox caps them.
const (
	maxRepBytes      = 16 << 20 // string.rep result
	maxSubjectBytes  = 1 << 20  // subject of find/match/gmatch/gsub
	maxPatternBytes  = 4 << 10
	maxPatternRepeat = 12 // *, +, - items: backtracking grows like len^items
)

// capBuiltins wraps string.rep and the pattern functions with size checks.
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
		}
		return callThrough(L, rep)
	}))
	for _, name := range []string{"find", "match", "gmatch", "gsub"} {
		orig := str.RawGetString(name).(*lua.LFunction)
		fname := "string." + name
		str.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if err := checkPattern(L.CheckString(1), L.OptString(2, "")); err != "" {
				L.RaiseError("%s: %s", fname, err)
			}
			return callThrough(L, orig)
		}))
	}
}

// checkPattern reports why a subject or pattern is too costly, or "".
func checkPattern(subject, pattern string) string {
	switch {
	case len(subject) > maxSubjectBytes:
		return fmt.Sprintf("the subject is %d bytes; the limit is %d MiB", len(subject), maxSubjectBytes>>20)
	case len(pattern) > maxPatternBytes:
		return fmt.Sprintf("the pattern is %d bytes; the limit is %d KiB", len(pattern), maxPatternBytes>>10)
	}
	repeats := 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '%':
			i++ // escaped character
		case '*', '+', '-':
			repeats++
		}
	}
	if repeats > maxPatternRepeat {
		return fmt.Sprintf("the pattern has %d repetition items (*, +, -); the limit is %d, as matching time grows exponentially with them", repeats, maxPatternRepeat)
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
