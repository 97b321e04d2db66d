package luaapi

// JSON <-> Lua conversion, by the rules users will expect (several of
// which layeh/gopher-json gets wrong):
//
//   - Lua -> JSON: an empty table is an object unless it carries json.array_mt;
//     a table whose keys are exactly 1..n is an array; a table with only string
//     keys is an object. Mixed, sparse or non-string/non-integer keys, NaN/Inf,
//     cycles, functions, userdata (except json.null), threads and channels are
//     errors that name the path. Integral numbers encode without a decimal
//     point; object keys are sorted.
//   - JSON -> Lua: arrays get json.array_mt and objects json.object_mt, so
//     values round-trip exactly. null inside an array is json.null, null as an
//     object value leaves the key absent, a top-level null is json.null.
//     Integers beyond ±2^53 (and numbers beyond the float64 range) become
//     strings holding the original text instead of being rounded.
//
// Everything here runs on the goroutine that owns the LState.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// MaxJSONDepth is the deepest nesting of arrays/objects (tables) accepted in
// either direction. The outermost table is at depth 1.
const MaxJSONDepth = 200

// maxSafeInteger is 2^53, the largest magnitude up to which every integer is
// exactly representable as a Lua number (float64).
const maxSafeInteger = 1 << 53

// markerField is the metatable field that marks a table as a JSON array or
// object. Any metatable with __jsontype = "array" / "object" is honoured, not
// only json.array_mt and json.object_mt.
const markerField = "__jsontype"

// registryKey is where the per-state sentinels live in the Lua registry.
const registryKey = "github.com/mcpvisor/mcpvisor/luaapi.json"

// ConvertError reports a value that cannot be converted between JSON and Lua,
// or JSON text that cannot be decoded.
type ConvertError struct {
	// Path locates the offending value, e.g. `$.args.files[3]`. Array indices
	// are Lua (1-based) indices, since the values live in Lua. Path is empty
	// for errors that concern the JSON text as a whole (syntax errors).
	Path string
	// Reason says what is wrong, e.g. "cannot encode function".
	Reason string
	// Err is the underlying error, if any (e.g. a *json.SyntaxError).
	Err error
}

// Error returns "path: reason", or just the reason when there is no path.
func (e *ConvertError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Unwrap returns the underlying error, if any.
func (e *ConvertError) Unwrap() error { return e.Err }

// jsonNull is the Value of every json.null userdata. Being unexported, it
// cannot be forged from outside the package.
type jsonNull struct{}

// markers are the per-state json.null sentinel and the array/object metatables.
type markers struct {
	null     *lua.LUserData
	arrayMT  *lua.LTable
	objectMT *lua.LTable
}

// jsonMarkers returns the state's markers, creating them on first use. They
// are shared by all threads of the state.
func jsonMarkers(L *lua.LState) *markers {
	if ud, ok := L.G.Registry.RawGetString(registryKey).(*lua.LUserData); ok {
		if m, ok := ud.Value.(*markers); ok {
			return m
		}
	}
	nullMT := L.NewTable()
	nullMT.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("json.null"))
		return 1
	}))
	nullMT.RawSetString("__metatable", lua.LString("json.null"))
	m := &markers{null: L.NewUserData(), arrayMT: L.NewTable(), objectMT: L.NewTable()}
	m.null.Value = jsonNull{}
	m.null.Metatable = nullMT
	m.arrayMT.RawSetString(markerField, lua.LString("array"))
	m.objectMT.RawSetString(markerField, lua.LString("object"))
	holder := L.NewUserData()
	holder.Value = m
	L.G.Registry.RawSetString(registryKey, holder)
	return m
}

// IsJSONNull reports whether v is a json.null sentinel (of any state).
func IsJSONNull(v lua.LValue) bool {
	ud, ok := v.(*lua.LUserData)
	if !ok {
		return false
	}
	_, ok = ud.Value.(jsonNull)
	return ok
}

// JSONArrayMetatable returns the state's json.array_mt, for Go code that
// builds Lua lists that must encode as arrays even when empty. Unlike the
// global `json`, it cannot be replaced by scripts.
func JSONArrayMetatable(L *lua.LState) *lua.LTable { return jsonMarkers(L).arrayMT }

// JSONNull returns the state's json.null sentinel.
func JSONNull(L *lua.LState) lua.LValue { return jsonMarkers(L).null }

// OpenJSON registers the global table `json` and returns it:
//
//	json.encode(v) -> string   raises "json.encode: <path>: <reason>"
//	json.decode(s) -> value    raises "json.decode: <reason>"
//	json.null                  sentinel for JSON null (tostring: "json.null")
//	json.array_mt              setmetatable(t, json.array_mt) encodes t as an array
//	json.object_mt             setmetatable(t, json.object_mt) encodes t as an object
func OpenJSON(L *lua.LState) *lua.LTable {
	m := jsonMarkers(L)
	mod := L.NewTable()
	L.SetFuncs(mod, map[string]lua.LGFunction{"encode": luaEncode, "decode": luaDecode})
	mod.RawSetString("null", m.null)
	mod.RawSetString("array_mt", m.arrayMT)
	mod.RawSetString("object_mt", m.objectMT)
	L.SetGlobal("json", mod)
	return mod
}

func luaEncode(L *lua.LState) int {
	out, err := EncodeJSON(L.CheckAny(1))
	if err != nil {
		L.RaiseError("json.encode: %s", err.Error())
	}
	L.Push(lua.LString(out))
	return 1
}

func luaDecode(L *lua.LState) int {
	data := L.CheckString(1)
	reserve(L, "json.decode", decodedSize(data))
	v, err := DecodeJSON(L, []byte(data))
	if err != nil {
		L.RaiseError("json.decode: %s", err.Error())
	}
	L.Push(v)
	return 1
}

// EncodeJSON encodes a Lua value as compact JSON text with sorted object keys.
// HTML characters are not escaped; invalid UTF-8 in strings becomes U+FFFD.
func EncodeJSON(v lua.LValue) ([]byte, error) {
	g, err := FromLua(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(g); err != nil { // cannot happen for FromLua output
		return nil, &ConvertError{Path: "$", Reason: err.Error(), Err: err}
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// DecodeJSON decodes exactly one JSON value (surrounding whitespace allowed)
// into a Lua value. A top-level null yields json.null. Errors are
// *ConvertError.
func DecodeJSON(L *lua.LState, data []byte) (lua.LValue, error) {
	v, err := decodeAny(data)
	if err != nil {
		return lua.LNil, err
	}
	b := builder{L: L, m: jsonMarkers(L)}
	if v == nil {
		return b.m.null, nil
	}
	return b.value(v, 0)
}

// ToLua converts a JSON-like Go value to Lua: nil, bool, string, float64,
// float32, int, int64, uint64, json.Number, []any, map[string]any,
// json.RawMessage (decoded first) and lua.LValue (passed through); any other
// value goes through encoding/json, so SDK structs work. A top-level nil (or
// JSON null) becomes Lua nil. Values that cannot be converted (e.g. a channel,
// or nesting deeper than MaxJSONDepth) yield Lua nil; use ToLuaChecked to get
// the reason.
func ToLua(L *lua.LState, v any) lua.LValue {
	lv, err := ToLuaChecked(L, v)
	if err != nil {
		return lua.LNil
	}
	return lv
}

// ToLuaChecked is ToLua that reports values it cannot convert as a
// *ConvertError.
func ToLuaChecked(L *lua.LState, v any) (lua.LValue, error) {
	b := builder{L: L, m: jsonMarkers(L)}
	return b.value(v, 0)
}

// decodeAny decodes exactly one JSON value with numbers kept as json.Number.
func decodeAny(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			return nil, &ConvertError{Reason: fmt.Sprintf("invalid JSON at offset %d: %s", se.Offset, se), Err: err}
		case errors.Is(err, io.EOF):
			return nil, &ConvertError{Reason: "invalid JSON: empty input", Err: err}
		default:
			return nil, &ConvertError{Reason: "invalid JSON: " + err.Error(), Err: err}
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &ConvertError{Reason: fmt.Sprintf("invalid JSON: unexpected data after the value at offset %d", dec.InputOffset())}
	}
	return v, nil
}

// decodedSize estimates the memory decoding data takes at its peak, when
// the Go values it is decoded into and the Lua values made of them are
// both alive: measured, about 130 bytes per array element, 230–320 per
// empty array or object and 620 per object member, on top of a few times
// the text. Counting the structure outside strings is one quick pass.
func decodedSize(data string) int {
	if 480*len(data) < bigValue {
		return 0 // small however it is made: not worth the pass
	}
	n := 3 * len(data)
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case escaped:
			escaped = false
		case inString:
			escaped = c == '\\'
			inString = c != '"'
		case c == '"':
			inString = true
		case c == ',':
			n += 128
		case c == '[' || c == '{':
			n += 320
		case c == ':':
			n += 480
		}
	}
	return n
}

// builder converts Go values to Lua values.
type builder struct {
	L    *lua.LState
	m    *markers
	path []segment
}

func (b *builder) fail(format string, args ...any) error {
	return &ConvertError{Path: formatPath(b.path), Reason: fmt.Sprintf(format, args...)}
}

// value converts v, which sits at nesting depth depth (number of enclosing
// arrays/objects).
func (b *builder) value(v any, depth int) (lua.LValue, error) {
	switch v := v.(type) {
	case nil:
		return lua.LNil, nil
	case lua.LValue:
		return v, nil
	case bool:
		return lua.LBool(v), nil
	case string:
		return lua.LString(v), nil
	case float64:
		return lua.LNumber(v), nil
	case float32:
		return lua.LNumber(v), nil
	case int:
		return intToLua(int64(v)), nil
	case int64:
		return intToLua(v), nil
	case uint64:
		if v > maxSafeInteger {
			return lua.LString(strconv.FormatUint(v, 10)), nil
		}
		return lua.LNumber(v), nil
	case json.Number:
		lv, err := numberToLua(string(v))
		if err != nil {
			return lua.LNil, b.fail("invalid number %q", string(v))
		}
		return lv, nil
	case []any:
		return b.array(v, depth)
	case map[string]any:
		return b.object(v, depth)
	case json.RawMessage:
		if len(v) == 0 {
			return lua.LNil, nil
		}
		g, err := decodeAny(v)
		if err != nil {
			return lua.LNil, b.fail("json.RawMessage: %s", err.Error())
		}
		return b.value(g, depth)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return lua.LNil, b.fail("cannot convert %T: %v", v, err)
	}
	g, err := decodeAny(data)
	if err != nil {
		return lua.LNil, b.fail("cannot convert %T: %v", v, err)
	}
	return b.value(g, depth)
}

func (b *builder) array(v []any, depth int) (lua.LValue, error) {
	if depth >= MaxJSONDepth {
		return lua.LNil, b.fail("nested deeper than %d levels", MaxJSONDepth)
	}
	t := b.L.CreateTable(len(v), 0)
	for i, e := range v {
		b.path = append(b.path, segment{index: int64(i + 1), isIndex: true})
		lv, err := b.value(e, depth+1)
		b.path = b.path[:len(b.path)-1]
		if err != nil {
			return lua.LNil, err
		}
		if lv == lua.LNil {
			lv = b.m.null // keep positions and # intact
		}
		t.RawSetInt(i+1, lv)
	}
	t.Metatable = b.m.arrayMT
	return t, nil
}

func (b *builder) object(v map[string]any, depth int) (lua.LValue, error) {
	if depth >= MaxJSONDepth {
		return lua.LNil, b.fail("nested deeper than %d levels", MaxJSONDepth)
	}
	t := b.L.CreateTable(0, len(v))
	// Insert in key order: gopher-lua's pairs follows insertion order, so
	// scripts iterating a decoded object behave the same on every run.
	for _, k := range slices.Sorted(maps.Keys(v)) {
		b.path = append(b.path, segment{key: k})
		lv, err := b.value(v[k], depth+1)
		b.path = b.path[:len(b.path)-1]
		if err != nil {
			return lua.LNil, err
		}
		t.RawSetString(k, lv) // nil leaves the key absent
	}
	t.Metatable = b.m.objectMT
	return t, nil
}

// intToLua keeps integers beyond ±2^53 exact by turning them into strings.
func intToLua(n int64) lua.LValue {
	if n > maxSafeInteger || n < -maxSafeInteger {
		return lua.LString(strconv.FormatInt(n, 10))
	}
	return lua.LNumber(n)
}

// numberToLua converts JSON number text. Integer literals beyond ±2^53 and
// numbers beyond the float64 range stay strings with the original text.
func numberToLua(s string) (lua.LValue, error) {
	if !strings.ContainsAny(s, ".eE") {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return lua.LString(s), nil
			}
			return lua.LNil, err
		}
		return intToLua(n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) && math.IsInf(f, 0) {
			return lua.LString(s), nil
		}
		return lua.LNil, err
	}
	return lua.LNumber(f), nil
}

// segment is one step of a path: an object key or a (1-based) integer key.
type segment struct {
	key     string
	index   int64
	isIndex bool
}

// formatPath renders segments as `$.a.b[3]["not an identifier"]`.
func formatPath(segs []segment) string {
	var sb strings.Builder
	sb.WriteByte('$')
	for _, s := range segs {
		switch {
		case s.isIndex:
			sb.WriteByte('[')
			sb.WriteString(strconv.FormatInt(s.index, 10))
			sb.WriteByte(']')
		case isIdentifier(s.key):
			sb.WriteByte('.')
			sb.WriteString(s.key)
		default:
			sb.WriteByte('[')
			sb.WriteString(strconv.Quote(s.key))
			sb.WriteByte(']')
		}
	}
	return sb.String()
}

// FromLua converts a Lua value to a JSON-compatible Go value: nil, bool,
// string, int64 (integral numbers within the int64 range), float64, []any or
// map[string]any. json.null yields nil. Values JSON cannot express are
// reported as a *ConvertError naming the path, e.g.
// `$.args.files[3]: cannot encode function`.
func FromLua(v lua.LValue) (any, error) {
	var e encoder
	return e.value(v)
}

// encoder converts Lua values to Go values.
type encoder struct {
	path  []segment
	stack []*lua.LTable // tables being converted; stack[i] sits at path[:i]
}

func (e *encoder) fail(format string, args ...any) error {
	return &ConvertError{Path: formatPath(e.path), Reason: fmt.Sprintf(format, args...)}
}

func (e *encoder) value(v lua.LValue) (any, error) {
	switch v := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LString:
		return string(v), nil
	case lua.LNumber:
		f := float64(v)
		switch {
		case math.IsNaN(f):
			return nil, e.fail("cannot encode NaN")
		case math.IsInf(f, 0):
			return nil, e.fail("cannot encode %v", f)
		}
		if n, ok := integral(f); ok {
			return n, nil
		}
		return f, nil
	case *lua.LTable:
		return e.table(v)
	case *lua.LUserData:
		if IsJSONNull(v) {
			return nil, nil
		}
	}
	return nil, e.fail("cannot encode %s", v.Type())
}

// tableKey is one key of a table being encoded as an object.
type tableKey struct {
	name  string  // JSON key
	seg   segment // how the key appears in paths
	value lua.LValue
}

func (e *encoder) table(t *lua.LTable) (any, error) {
	for i, anc := range e.stack {
		if anc == t {
			return nil, e.fail("cycle: table refers back to %s", formatPath(e.path[:i]))
		}
	}
	if len(e.stack) >= MaxJSONDepth {
		return nil, e.fail("nested deeper than %d levels", MaxJSONDepth)
	}
	e.stack = append(e.stack, t)
	defer func() { e.stack = e.stack[:len(e.stack)-1] }()

	kind := tableKind(t)
	var keys []tableKey
	var nInt, nStr int64
	minInt, maxInt := int64(math.MaxInt64), int64(math.MinInt64)
	var badKey lua.LValue
	t.ForEach(func(k, v lua.LValue) {
		switch k := k.(type) {
		case lua.LString:
			nStr++
			keys = append(keys, tableKey{name: string(k), seg: segment{key: string(k)}, value: v})
			return
		case lua.LNumber:
			if n, ok := integral(float64(k)); ok {
				nInt++
				minInt, maxInt = min(minInt, n), max(maxInt, n)
				keys = append(keys, tableKey{name: strconv.FormatInt(n, 10), seg: segment{index: n, isIndex: true}, value: v})
				return
			}
		}
		if badKey == nil || compareKeys(k, badKey) < 0 {
			badKey = k // report the smallest, so the message is deterministic
		}
	})
	switch {
	case badKey != nil:
		return nil, e.fail("unsupported table key %s (keys must be strings or integers)", keyString(badKey))
	case kind == "object" || (kind == "" && nInt == 0):
		return e.object(keys)
	case nStr > 0 && kind == "array":
		return nil, e.fail("table marked as array has string keys")
	case nStr > 0:
		return nil, e.fail("table mixes integer keys and string keys")
	case nInt > 0 && minInt < 1:
		return nil, e.fail("array index %d out of range (arrays start at 1)", minInt)
	case maxInt > nInt:
		return nil, e.fail("sparse array: %d elements but index %d is used (use json.null for holes)", nInt, maxInt)
	}
	out := make([]any, nInt)
	for i := range out {
		e.path = append(e.path, segment{index: int64(i + 1), isIndex: true})
		g, err := e.value(t.RawGetInt(i + 1))
		e.path = e.path[:len(e.path)-1]
		if err != nil {
			return nil, err
		}
		out[i] = g
	}
	return out, nil
}

// object converts the keys of an object table, in sorted order so that the
// first error reported is deterministic.
func (e *encoder) object(keys []tableKey) (any, error) {
	slices.SortFunc(keys, func(a, b tableKey) int { return strings.Compare(a.name, b.name) })
	out := make(map[string]any, len(keys))
	for i, k := range keys {
		if i > 0 && keys[i-1].name == k.name {
			return nil, e.fail("duplicate object key %q (integer and string key)", k.name)
		}
		e.path = append(e.path, k.seg)
		g, err := e.value(k.value)
		e.path = e.path[:len(e.path)-1]
		if err != nil {
			return nil, err
		}
		out[k.name] = g
	}
	return out, nil
}

// tableKind returns "array" or "object" when t's metatable carries the JSON
// marker, or "".
func tableKind(t *lua.LTable) string {
	mt, ok := t.Metatable.(*lua.LTable)
	if !ok {
		return ""
	}
	switch s, _ := mt.RawGetString(markerField).(lua.LString); s {
	case "array", "object":
		return string(s)
	}
	return ""
}

// keyString renders a table key for error messages.
func keyString(k lua.LValue) string {
	if k.Type() == lua.LTNumber {
		return k.String()
	}
	return "of type " + k.Type().String()
}
