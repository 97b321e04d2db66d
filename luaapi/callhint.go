package luaapi

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcpvisor/mcpvisor/internal/suggest"
	lua "github.com/yuin/gopher-lua"
)

// nonFunctionCall is how gopher-lua words a call of a value that is not a
// function, without saying which.
const nonFunctionCall = "attempt to call a non-function object"

// explainCall rewrites msg, raised in L for calling something that is not
// a function, to name what was called and suggest the closest global, or
// global table's field, when it was a typo:
//
//	startup.lua:1: attempt to call 'mcp_ad', which is nil; did you mean mcp_add?
//
// It is given the raising frame, so the name comes from the calls compiled
// on the current line; a call whose name does not resolve to a
// non-function global, or a line of several such calls, keeps msg.
func explainCall(L *lua.LState, msg string) string {
	if !strings.HasSuffix(msg, nonFunctionCall) {
		return msg
	}
	dbg, ok := L.GetStack(0)
	if !ok {
		return msg
	}
	v, err := L.GetInfo("lf", dbg, lua.LNil)
	fn, _ := v.(*lua.LFunction)
	if err != nil || fn == nil || fn.IsG || fn.Proto == nil {
		return msg
	}
	var name string
	var value lua.LValue
	for _, call := range fn.Proto.DbgCalls {
		if call.Pc >= len(fn.Proto.DbgSourcePositions) || fn.Proto.DbgSourcePositions[call.Pc] != dbg.CurrentLine {
			continue
		}
		v := L.GetGlobal(call.Name)
		if _, isFn := v.(*lua.LFunction); isFn || !isName(call.Name) {
			continue
		}
		if name != "" && name != call.Name {
			return msg // two candidates on the line: guessing could mislead
		}
		name, value = call.Name, v
	}
	if name == "" {
		return msg
	}
	out := strings.TrimSuffix(msg, nonFunctionCall) + fmt.Sprintf("attempt to call '%s', which is %s", name, describeValue(value))
	if best := closestGlobal(L, name); best != "" {
		out += "; did you mean " + best + "?"
	}
	return out
}

// closestGlobal is the global function, or function field of a global
// table (json.encode), whose name is closest to name, or "".
func closestGlobal(L *lua.LState, name string) string {
	var funcs []string
	fields := map[string]string{} // field name → "table.field"
	L.G.Global.ForEach(func(k, v lua.LValue) {
		key, ok := k.(lua.LString)
		if !ok {
			return
		}
		switch x := v.(type) {
		case *lua.LFunction:
			funcs = append(funcs, string(key))
		case *lua.LTable:
			if x == L.G.Global {
				return
			}
			x.ForEach(func(fk, fv lua.LValue) {
				if f, ok := fk.(lua.LString); ok {
					if _, isFn := fv.(*lua.LFunction); isFn {
						fields[string(f)] = string(key) + "." + string(f)
					}
				}
			})
		}
	})
	sort.Strings(funcs)
	if best := suggest.Closest(name, funcs); best != "" {
		return best
	}
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	sort.Strings(names)
	if best := suggest.Closest(name, names); best != "" {
		return fields[best]
	}
	return ""
}

// describeValue says what a value is, for "which is nil" or "which is a
// number".
func describeValue(v lua.LValue) string {
	if v == lua.LNil {
		return "nil"
	}
	return "a " + v.Type().String()
}

// isName reports whether s is a Lua name (not "?" or "(anonymous)").
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && (i == 0 || !('0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}
