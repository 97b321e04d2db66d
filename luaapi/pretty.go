package luaapi

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

const (
	// prettyMaxDepth is the deepest table Pretty expands; deeper ones print
	// as {...}. The outermost table is at depth 1.
	prettyMaxDepth = 20
	// prettyInlineWidth is the longest `{ 1, 2, 3 }` rendering kept on one line.
	prettyInlineWidth = 72
)

// Pretty renders a Lua value for humans (the REPL). Strings are always quoted
// with Lua escapes; tables list their keys sorted (numbers in numeric order,
// then strings, then booleans and the rest) with 2-space indentation;
// sequences (keys exactly 1..n) print their values without keys, on one line
// (`{ 1, 2, 3 }`) when they hold no tables and fit in 72 characters. A table
// that contains itself prints `<cycle>` where it recurs, tables nested deeper
// than 20 print `{...}`, json.null prints `json.null` and functions,
// userdata, threads and channels print as `<function>` etc. The output is
// deterministic except for the order of keys that are neither numbers,
// strings nor booleans.
func Pretty(v lua.LValue) string {
	var p printer
	p.value(v, 0)
	return p.sb.String()
}

// printer accumulates Pretty's output.
type printer struct {
	sb    strings.Builder
	stack []*lua.LTable // tables being printed (ancestors of the current one)
}

func (p *printer) value(v lua.LValue, indent int) {
	if t, ok := v.(*lua.LTable); ok {
		p.table(t, indent)
		return
	}
	p.sb.WriteString(scalarString(v))
}

// entry is one key/value pair of a table.
type entry struct{ key, value lua.LValue }

func (p *printer) table(t *lua.LTable, indent int) {
	if slices.Contains(p.stack, t) {
		p.sb.WriteString("<cycle>")
		return
	}
	if len(p.stack) >= prettyMaxDepth {
		p.sb.WriteString("{...}")
		return
	}
	entries := sortedEntries(t)
	if len(entries) == 0 {
		p.sb.WriteString("{}")
		return
	}
	seq := isSequence(entries)
	if seq {
		if line, ok := inline(entries); ok {
			p.sb.WriteString(line)
			return
		}
	}
	p.stack = append(p.stack, t)
	defer func() { p.stack = p.stack[:len(p.stack)-1] }()
	p.sb.WriteString("{\n")
	for _, e := range entries {
		p.sb.WriteString(strings.Repeat("  ", indent+1))
		if !seq {
			p.sb.WriteString(keyText(e.key))
			p.sb.WriteString(" = ")
		}
		p.value(e.value, indent+1)
		p.sb.WriteString(",\n")
	}
	p.sb.WriteString(strings.Repeat("  ", indent))
	p.sb.WriteByte('}')
}

// inline renders a sequence of non-table values on one line, if it fits.
func inline(entries []entry) (string, bool) {
	var sb strings.Builder
	sb.WriteString("{ ")
	for i, e := range entries {
		if e.value.Type() == lua.LTTable {
			return "", false
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(scalarString(e.value))
		if sb.Len() > prettyInlineWidth {
			return "", false
		}
	}
	sb.WriteString(" }")
	return sb.String(), sb.Len() <= prettyInlineWidth
}

// sortedEntries returns t's pairs ordered by keyRank, then by key.
func sortedEntries(t *lua.LTable) []entry {
	var entries []entry
	t.ForEach(func(k, v lua.LValue) { entries = append(entries, entry{k, v}) })
	slices.SortStableFunc(entries, func(a, b entry) int { return compareKeys(a.key, b.key) })
	return entries
}

// compareKeys orders table keys: numbers (numerically), strings, booleans
// (false first), then other types by type name.
func compareKeys(a, b lua.LValue) int {
	if c := cmp.Compare(keyRank(a), keyRank(b)); c != 0 {
		return c
	}
	switch a := a.(type) {
	case lua.LNumber:
		return cmp.Compare(float64(a), float64(b.(lua.LNumber)))
	case lua.LString:
		return strings.Compare(string(a), string(b.(lua.LString)))
	case lua.LBool:
		if a == b {
			return 0
		} else if a {
			return 1
		}
		return -1
	}
	return strings.Compare(a.Type().String(), b.Type().String())
}

// keyRank orders key types: numbers, strings, booleans, everything else.
func keyRank(k lua.LValue) int {
	switch k.Type() {
	case lua.LTNumber:
		return 0
	case lua.LTString:
		return 1
	case lua.LTBool:
		return 2
	}
	return 3
}

// isSequence reports whether sorted entries have exactly the keys 1..n.
func isSequence(entries []entry) bool {
	for i, e := range entries {
		if n, ok := e.key.(lua.LNumber); !ok || float64(n) != float64(i+1) {
			return false
		}
	}
	return true
}

// keyText renders a table key as Lua source: `name` or `[key]`.
func keyText(k lua.LValue) string {
	switch k := k.(type) {
	case lua.LString:
		if isIdentifier(string(k)) && !luaKeywords[string(k)] {
			return string(k)
		}
	case *lua.LTable:
		return "[<table>]"
	}
	return "[" + scalarString(k) + "]"
}

// scalarString renders a non-table value.
func scalarString(v lua.LValue) string {
	switch v := v.(type) {
	case lua.LString:
		return quoteLua(string(v))
	case lua.LNumber:
		return formatNumber(float64(v))
	case *lua.LNilType, lua.LBool:
		return v.String()
	case *lua.LUserData:
		if IsJSONNull(v) {
			return "json.null"
		}
	}
	return "<" + v.Type().String() + ">"
}

// formatNumber renders integral numbers without a decimal point and others in
// their shortest form (exponent only for very small or large magnitudes).
func formatNumber(f float64) string {
	if n, ok := integral(f); ok {
		return strconv.FormatInt(n, 10)
	}
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// quoteLua quotes s as a Lua string literal. Control characters, invalid
// UTF-8 and non-printable runes become decimal byte escapes (`\027`), so the
// result is safe to print on a terminal and valid Lua.
func quoteLua(s string) string {
	var sb strings.Builder
	sb.Grow(len(s) + 2)
	sb.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if esc, ok := luaEscapes[c]; ok {
			sb.WriteString(esc)
			i++
			continue
		}
		if c >= 0x20 && c < 0x7f {
			sb.WriteByte(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if c >= utf8.RuneSelf && r != utf8.RuneError && unicode.IsPrint(r) {
			sb.WriteString(s[i : i+size])
		} else {
			for _, b := range []byte(s[i : i+size]) {
				sb.WriteByte('\\')
				sb.WriteString(strconv.Itoa(int(b) + 1000)[1:]) // 3 digits
			}
		}
		i += size
	}
	sb.WriteByte('"')
	return sb.String()
}

// luaEscapes are the short escapes of Lua string literals.
var luaEscapes = map[byte]string{
	'"': `\"`, '\\': `\\`, '\a': `\a`, '\b': `\b`, '\f': `\f`,
	'\n': `\n`, '\r': `\r`, '\t': `\t`, '\v': `\v`,
}

// luaKeywords cannot be used as bare table keys.
var luaKeywords = map[string]bool{
	"and": true, "break": true, "do": true, "else": true, "elseif": true,
	"end": true, "false": true, "for": true, "function": true, "goto": true,
	"if": true, "in": true, "local": true, "nil": true, "not": true, "or": true,
	"repeat": true, "return": true, "then": true, "true": true, "until": true,
	"while": true,
}

// isIdentifier reports whether s is a plain name: [A-Za-z_][A-Za-z0-9_]*.
// Used for JSON paths and Lua table keys.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range []byte(s) {
		letter := c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// integral returns f as an int64 when it is a whole number in the int64 range.
// Shared by the JSON encoder and Pretty.
func integral(f float64) (int64, bool) {
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}
