package luaapi

import (
	"context"
	"errors"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/luaapi/internal/luapm"
)

// The pattern functions string.find, match, gmatch and gsub, ported from
// gopher-lua's stringlib.go onto luapm, a copy of its matcher that polls a
// context, so that a pathological pattern in a hook cannot stall the host.
// gopher-lua's own matcher backtracks exponentially in one Go call that no
// context stops: ("a*"):rep(20) .. "c" against 20 a's and a b runs for
// hours. Here every match polls the running slice's context, so a hook's
// budget or the REPL's Ctrl-C stops it like any other Lua code.
//
// The results are gopher-lua's, quirks included (TestPatternParity), with
// three deliberate differences:
//   - string.gmatch matches lazily, one match per call of its iterator,
//     and returns only the iterator (gopher-lua lists every match up front
//     and returns the iterator and a state the iterator cannot do
//     without, so calling it by hand failed);
//   - string.gsub calls a replacement function after each match rather
//     than after all of them, builds its result in one pass and returns a
//     string where gopher-lua returned a number subject unchanged;
//   - string.find(s, p, init, true) with init past the end returns nil
//     where gopher-lua panicked on a slice bound.

// maxGsubBytes bounds the result of string.gsub: a long replacement for
// every byte of a 1 MiB subject would otherwise allocate terabytes
// between two looks at the budget.
const maxGsubBytes = maxRepBytes

// matchContext is the context a match polls: the running slice's (its
// budget, the chunk's cancellation), or none outside a task.
func matchContext(L *lua.LState) context.Context {
	if ctx := L.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// raiseMatchError raises err from matching in builtin name. A bad pattern
// reads as in gopher-lua ("malformed pattern …"); a match stopped by its
// context names the builtin and the cause. Either way the task's error is
// then decided by its context (the budget, an interruption): see resume.
func raiseMatchError(L *lua.LState, name string, err error) {
	if errors.Is(err, luapm.ErrInterrupted) {
		L.RaiseError("%s: %v", name, err)
	}
	L.RaiseError("%s", err.Error())
}

// checkedArgs returns the subject and the pattern of builtin name, raising
// if either is too large (see checkPattern).
func checkedArgs(L *lua.LState, name string) (subject, pattern string) {
	subject, pattern = L.CheckString(1), L.CheckString(2)
	if err := checkPattern(subject, pattern); err != "" {
		L.RaiseError("%s: %s", name, err)
	}
	return subject, pattern
}

// firstMatch is the first match of pattern in str from byte init, or nil.
func firstMatch(L *lua.LState, name, str, pattern string, init int) *luapm.MatchData {
	pat, err := luapm.Compile(pattern)
	if err != nil {
		raiseMatchError(L, name, err)
	}
	md, err := pat.Iter(str, init, 1).Next(matchContext(L))
	if err != nil {
		raiseMatchError(L, name, err)
	}
	return md
}

// pushCaptures pushes the captures of md from capture index from on (2:
// the first capture after the whole match) and returns how many.
func pushCaptures(L *lua.LState, str string, md *luapm.MatchData, from int) int {
	n := 0
	for i := from; i < md.CaptureLength(); i += 2 {
		L.Push(captureValue(str, md, i))
		n++
	}
	return n
}

// captureValue is capture idx of m: a position capture as a number, else
// the captured text.
func captureValue(str string, m *luapm.MatchData, idx int) lua.LValue {
	if m.IsPosCapture(idx) {
		return lua.LNumber(m.Capture(idx))
	}
	return lua.LString(str[m.Capture(idx):m.Capture(idx+1)])
}

// strFind is string.find(s, pattern [, init [, plain]]).
func strFind(L *lua.LState) int {
	str, pattern := checkedArgs(L, "string.find")
	if len(pattern) == 0 {
		// gopher-lua: 1, 0 whatever init is (PUC Lua: init, init-1).
		L.Push(lua.LNumber(1))
		L.Push(lua.LNumber(0))
		return 2
	}
	init := luaIndex2StringIndex(str, L.OptInt(3, 1), true)
	// gopher-lua reads plain only when it is the last argument.
	if L.GetTop() == 4 && lua.LVAsBool(L.Get(4)) {
		pos := -1
		if init <= len(str) {
			pos = strings.Index(str[init:], pattern)
		}
		if pos < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init + pos + 1))
		L.Push(lua.LNumber(init + pos + len(pattern)))
		return 2
	}
	md := firstMatch(L, "string.find", str, pattern, init)
	if md == nil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LNumber(md.Capture(0) + 1))
	L.Push(lua.LNumber(md.Capture(1)))
	return 2 + pushCaptures(L, str, md, 2)
}

// strMatch is string.match(s, pattern [, init]).
func strMatch(L *lua.LState) int {
	str, pattern := checkedArgs(L, "string.match")
	offset := L.OptInt(3, 1)
	if offset < 0 {
		offset = len(str) + offset + 1
	}
	offset = max(offset-1, 0)
	md := firstMatch(L, "string.match", str, pattern, offset)
	if md == nil {
		return 0 // gopher-lua returns nothing rather than nil
	}
	if md.CaptureLength() == 2 { // no captures: the whole match
		L.Push(lua.LString(str[md.Capture(0):md.Capture(1)]))
		return 1
	}
	return pushCaptures(L, str, md, 2)
}

// strGmatch is string.gmatch(s, pattern): an iterator that finds the next
// match at each call, polling the context of the slice that calls it.
func strGmatch(L *lua.LState) int {
	str, pattern := checkedArgs(L, "string.gmatch")
	pat, err := luapm.Compile(pattern)
	if err != nil {
		raiseMatchError(L, "string.gmatch", err)
	}
	it := pat.Iter(str, 0, -1)
	L.Push(L.NewFunction(func(L *lua.LState) int {
		md, err := it.Next(matchContext(L))
		if err != nil {
			raiseMatchError(L, "string.gmatch", err)
		}
		if md == nil {
			return 0
		}
		if md.CaptureLength() == 2 {
			L.Push(lua.LString(str[md.Capture(0):md.Capture(1)]))
			return 1
		}
		return pushCaptures(L, str, md, 2)
	}))
	return 1
}

// strGsub is string.gsub(s, pattern, repl [, n]) with gopher-lua's
// semantics but its result built in one pass: gopher-lua copies the whole
// string once per match, so replacing every character of 64 KiB took
// 4.4 s (of 1 MiB, minutes).
func strGsub(L *lua.LState) int {
	str, pat := checkedArgs(L, "string.gsub")
	L.CheckTypes(3, lua.LTString, lua.LTTable, lua.LTFunction)
	repl := L.Get(3)
	limit := L.OptInt(4, -1)
	compiled, err := luapm.Compile(pat)
	if err != nil {
		raiseMatchError(L, "string.gsub", err)
	}
	it := compiled.Iter(str, 0, limit)
	var b strings.Builder
	last, n := 0, 0
	write := func(s string) {
		if b.Len()+len(s) > maxGsubBytes {
			L.RaiseError("string.gsub: the result would exceed %d MiB", maxGsubBytes>>20)
		}
		b.WriteString(s)
	}
	for {
		m, err := it.Next(matchContext(L))
		if err != nil {
			raiseMatchError(L, "string.gsub", err)
		}
		if m == nil {
			break
		}
		n++
		start, end := m.Capture(0), m.Capture(1)
		write(str[last:start])
		last = end
		var v lua.LValue
		switch r := repl.(type) {
		case lua.LString:
			write(expandReplacement(L, str, string(r), m))
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
				nargs = pushCaptures(L, str, m, 2)
			} else {
				L.Push(lua.LString(str[start:end]))
			}
			L.Call(nargs, 1)
			v = L.Get(-1)
			L.Pop(1)
		}
		if lua.LVIsFalse(v) {
			write(str[start:end]) // false or nil keeps the match
		} else {
			write(lua.LVAsString(v))
		}
	}
	write(str[last:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// expandReplacement is a gsub replacement string for match m: %0-%9 are
// captures, %% is %, and any other % sequence stays as it is (gopher-lua's
// rules).
func expandReplacement(L *lua.LState, str, repl string, m *luapm.MatchData) string {
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
			b.WriteString(lua.LVAsString(captureValue(str, m, idx)))
		default:
			b.WriteByte('%')
			b.WriteByte(d)
		}
	}
	return b.String()
}

// luaIndex2StringIndex is gopher-lua's: Lua index i (1-based, negative
// from the end) as a byte offset into str, clamped at 0 (and at len(str)
// for an end index).
func luaIndex2StringIndex(str string, i int, start bool) int {
	if start && i != 0 {
		i--
	}
	l := len(str)
	if i < 0 {
		i = l + i + 1
	}
	i = max(0, i)
	if !start && i > l {
		i = l
	}
	return i
}
