package luaapi

import (
	"reflect"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// What makes one large value in a single Go call is sized before it runs
// and refused over the memory limit (reserve): the watchdog cannot stop an
// allocation, and one `s .. s` of a 1 GiB string is 2 GiB at once.

// luaJumpTable is gopher-lua's table of instruction handlers. gopher-lua
// has no hook on the concatenation of strings (only __concat, for other
// values), so OP_CONCAT's handler is wrapped once for every state: it sizes
// the operands before the original joins them. The handler's third
// parameter is an unexported *callFrame, passed through untouched.
//
//go:linkname luaJumpTable github.com/yuin/gopher-lua.jumpTable
var luaJumpTable [lua.OP_NOP + 1]func(*lua.LState, uint32, unsafe.Pointer) int

func init() {
	concat := luaJumpTable[lua.OP_CONCAT]
	luaJumpTable[lua.OP_CONCAT] = func(L *lua.LState, inst uint32, frame unsafe.Pointer) int {
		// R(A) := R(B) .. … .. R(C); registers count from 0 in the frame,
		// L.Get from 1.
		b, c := int(inst&0x1ff), int(inst>>9)&0x1ff
		n := 0
		for i := b; i <= c; i++ {
			n += stringSize(L.Get(i + 1))
		}
		reserve(L, "`..`", n)
		return concat(L, inst, frame)
	}
	if !arraysReadable {
		return // growth is left to the watchdog (TestTableArrayLayout fails)
	}
	// R(A)[…] := …: a table's array grows by one allocation of 1.25
	// times its size when it is full.
	for _, op := range []int{lua.OP_SETTABLE, lua.OP_SETTABLEKS, lua.OP_SETLIST} {
		set := luaJumpTable[op]
		luaJumpTable[op] = func(L *lua.LState, inst uint32, frame unsafe.Pointer) int {
			if t, ok := L.Get(int(inst>>18)&0xff + 1).(*lua.LTable); ok {
				reserveGrowth(L, t)
			}
			return set(L, inst, frame)
		}
	}
}

// tableHead is the start of a lua.LTable: its metatable and its array.
type tableHead struct {
	metatable lua.LValue
	array     []lua.LValue
}

// arraysReadable is arrayLayoutKnown(), found once.
var arraysReadable = arrayLayoutKnown()

// arrayLayoutKnown reports whether lua.LTable starts as tableHead does, so
// that its array's length and capacity can be read.
func arrayLayoutKnown() bool {
	t := reflect.TypeFor[lua.LTable]()
	h := reflect.TypeFor[tableHead]()
	if t.NumField() < 2 {
		return false
	}
	for i := range 2 {
		if t.Field(i).Type != h.Field(i).Type || t.Field(i).Offset != h.Field(i).Offset {
			return false
		}
	}
	return t.Field(1).Name == "array"
}

// bigArray is the capacity from which a full array's growth is checked
// against the memory limit.
const bigArray = bigValue / 16

// reserveGrowth checks the growth of t's array when it is full.
func reserveGrowth(L *lua.LState, t *lua.LTable) {
	a := (*tableHead)(unsafe.Pointer(t)).array
	if n := cap(a); n >= bigArray && len(a) == n {
		reserve(L, "growing a table", n*16*5/4)
	}
}

// stringSize is how long v is as a string: a number's text is short, and
// other values are joined by metamethods, which make their own.
func stringSize(v lua.LValue) int {
	switch v := v.(type) {
	case lua.LString:
		return len(v)
	case lua.LNumber:
		return 24
	}
	return 0
}

// sizeBuiltins wraps the string and table functions that make one value of
// a size their arguments choose.
func sizeBuiltins(L *lua.LState) {
	if tab, ok := L.GetGlobal("table").(*lua.LTable); ok {
		wrap(L, tab, "concat", func(L *lua.LState) {
			reserve(L, "table.concat", concatSize(L))
		})
		wrap(L, tab, "insert", growing)
	}
	if base, ok := L.GetGlobal("_G").(*lua.LTable); ok {
		wrap(L, base, "rawset", growing)
	}
	str, ok := L.GetGlobal("string").(*lua.LTable)
	if !ok {
		return
	}
	wrap(L, str, "format", func(L *lua.LState) {
		// gopher-lua formats with fmt.Sprintf: its buffer grows by
		// appending, then is copied into the string, so a result of n
		// bytes briefly needs about three times that.
		reserve(L, "string.format", 3*formatSize(L))
	})
	for _, name := range []string{"upper", "lower", "reverse"} {
		wrap(L, str, name, func(L *lua.LState) {
			reserve(L, "string."+name, stringSize(L.Get(1)))
		})
	}
}

// growing checks the growth of the table its builtin adds to.
func growing(L *lua.LState) {
	if t, ok := L.Get(1).(*lua.LTable); ok && arraysReadable {
		reserveGrowth(L, t)
	}
}

// wrap replaces lib[name] with a function that runs check, then the
// original with the same arguments.
func wrap(L *lua.LState, lib *lua.LTable, name string, check func(*lua.LState)) {
	orig, ok := lib.RawGetString(name).(*lua.LFunction)
	if !ok {
		return
	}
	lib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
		check(L)
		return callThrough(L, orig)
	}))
}

// concatSize is the length of table.concat(t, sep, i, j)'s result, as far
// as the elements are strings or numbers (the original refuses the rest).
func concatSize(L *lua.LState) int {
	t, ok := L.Get(1).(*lua.LTable)
	if !ok {
		return 0
	}
	sep, _ := L.Get(2).(lua.LString)
	i, j := 1, t.Len()
	if v, ok := L.Get(3).(lua.LNumber); ok {
		i = max(int(v), 1)
	}
	if v, ok := L.Get(4).(lua.LNumber); ok {
		j = min(int(v), t.Len())
	}
	n := 0
	for k := i; k <= j; k++ {
		s := stringSize(t.RawGetInt(k))
		if s == 0 && t.RawGetInt(k).Type() != lua.LTString {
			break
		}
		n += s + len(sep)
	}
	return n
}

// formatSize bounds the length of string.format(f, ...)'s result: each
// directive is as long as its argument or its width, whichever is more
// (gopher-lua formats with Go's fmt, which caps widths at a million).
func formatSize(L *lua.LState) int {
	f, ok := L.Get(1).(lua.LString)
	if !ok {
		return 0
	}
	n, arg := len(f), 2
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		width := 0
		for i < len(f) && (f[i] == '-' || f[i] == '+' || f[i] == ' ' || f[i] == '#' || f[i] == '0') {
			i++
		}
		for ; i < len(f) && (f[i] >= '0' && f[i] <= '9' || f[i] == '.'); i++ {
			if f[i] == '.' {
				continue
			}
			width = min(width*10+int(f[i]-'0'), 1_000_000)
		}
		size := stringSize(L.Get(arg))
		if i < len(f) && f[i] == 'q' {
			size *= 4 // a control character becomes \ddd
		}
		n += max(width, size, 32)
		arg++
	}
	return n
}
