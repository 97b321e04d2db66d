package luaapi

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

// Builtins that run as one Go call ignore the slice budget (NOTES.md:
// string.rep("x", 1e9) took 1.6 s and 1 GiB), so the sandbox caps them.
const (
	maxRepBytes      = 16 << 20 // string.rep result
	maxSubjectBytes  = 1 << 20  // subject of find/match/gmatch/gsub
	maxPatternBytes  = 4 << 10
	maxPatternRepeat = 12 // *, +, -, ? items: backtracking grows like len^items
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
	str.RawSetString("gsub", L.NewFunction(gsub))
	for _, name := range []string{"find", "match", "gmatch"} {
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
	if repeats := repetitions(pattern); repeats > maxPatternRepeat {
		return fmt.Sprintf("the pattern has %d repetition items (*, +, -, ?); the limit is %d, as matching time grows exponentially with them", repeats, maxPatternRepeat)
	}
	return ""
}

// repetitions counts the pattern items with a quantifier (*, +, -, ?). A
// quantifier follows a single character class: a character, ".", "%x" or
// a set "[...]". Inside a set, after a capture or at the start of an item
// those characters are literals ("[a-z]" has no repetition).
func repetitions(p string) int {
	n, i := 0, 0
	if strings.HasPrefix(p, "^") {
		i++
	}
	for i < len(p) {
		switch p[i] {
		case '(', ')':
			i++
			continue
		case '%':
			switch {
			case i+1 < len(p) && p[i+1] == 'b': // %bxy
				i += 4
				continue
			case i+1 < len(p) && p[i+1] == 'f': // %f[set]
				i = skipSet(p, i+2)
				continue
			}
			i += 2
		case '[':
			i = skipSet(p, i)
		default:
			i++
		}
		if i < len(p) && strings.IndexByte("*+-?", p[i]) >= 0 {
			n++
			i++
		}
	}
	return n
}

// skipSet returns the index just after the set "[...]" that starts at i.
func skipSet(p string, i int) int {
	if i >= len(p) || p[i] != '[' {
		return i
	}
	i++
	if i < len(p) && p[i] == '^' {
		i++
	}
	if i < len(p) && p[i] == ']' { // "[]...]": a leading ] is a member
		i++
	}
	for i < len(p) && p[i] != ']' {
		if p[i] == '%' {
			i++
		}
		i++
	}
	return i + 1
}

// gsub is string.gsub with gopher-lua's semantics but its result built in
// one pass: gopher-lua copies the whole string once per match, so
// replacing every character of 64 KiB took 4.4 s (of 1 MiB, minutes) in
// one Go call that the slice budget cannot stop.
func gsub(L *lua.LState) int {
	str := L.CheckString(1)
	pat := L.CheckString(2)
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl := L.Get(3)
	limit := L.OptInt(4, -1)
	if err := checkPattern(str, pat); err != "" {
		L.RaiseError("string.gsub: %s", err)
	}
	mds, err := pm.Find(pat, []byte(str), 0, limit)
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	var b strings.Builder
	last := 0
	for _, m := range mds {
		start, end := m.Capture(0), m.Capture(1)
		b.WriteString(str[last:start])
		last = end
		var v lua.LValue
		switch r := repl.(type) {
		case lua.LString:
			b.WriteString(expandReplacement(L, str, string(r), m))
			continue
		case *lua.LTable:
			idx := 0
			if m.CaptureLength() > 2 { // the first capture, or the whole match
				idx = 2
			}
			if m.IsPosCapture(idx) {
				v = L.GetTable(r, lua.LNumber(m.Capture(idx)))
			} else {
				v = L.GetField(r, str[m.Capture(idx):m.Capture(idx+1)])
			}
		case *lua.LFunction:
			L.Push(r)
			nargs := 1
			if m.CaptureLength() > 2 {
				nargs = 0
				for i := 2; i < m.CaptureLength(); i += 2 {
					L.Push(captureValue(L, str, m, i))
					nargs++
				}
			} else {
				L.Push(lua.LString(str[start:end]))
			}
			L.Call(nargs, 1)
			v = L.Get(-1)
			L.Pop(1)
		}
		if lua.LVIsFalse(v) {
			b.WriteString(str[start:end]) // false or nil keeps the match
		} else {
			b.WriteString(lua.LVAsString(v))
		}
	}
	b.WriteString(str[last:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(len(mds)))
	return 2
}

// expandReplacement is a gsub replacement string for match m: %0-%9 are
// captures, %% is %, and any other % sequence stays as it is (gopher-lua's
// rules).
func expandReplacement(L *lua.LState, str, repl string, m *pm.MatchData) string {
	if strings.IndexByte(repl, '%') < 0 {
		return repl
	}
	var b strings.Builder
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '%' || i == len(repl)-1 {
			b.WriteByte(c)
			continue
		}
		i++
		switch d := repl[i]; {
		case d == '%':
			b.WriteByte('%')
		case d >= '0' && d <= '9':
			idx := 2 * int(d-'0')
			if idx > 2 && idx >= m.CaptureLength() {
				L.RaiseError("invalid capture index")
			}
			if idx == 2 && m.CaptureLength() <= 2 {
				idx = 0 // %1 without captures is the whole match
			}
			b.WriteString(lua.LVAsString(captureValue(L, str, m, idx)))
		default:
			b.WriteByte('%')
			b.WriteByte(d)
		}
	}
	return b.String()
}

// captureValue is capture idx of m: a position capture as a number, else
// the captured text.
func captureValue(L *lua.LState, str string, m *pm.MatchData, idx int) lua.LValue {
	if m.IsPosCapture(idx) {
		return lua.LNumber(m.Capture(idx))
	}
	return lua.LString(str[m.Capture(idx):m.Capture(idx+1)])
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
