package luaapi_test

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/luaapi"
)

// newJSONState returns a state with the standard libraries and `json`.
func newJSONState(t testing.TB) *lua.LState {
	t.Helper()
	L := lua.NewState()
	t.Cleanup(L.Close)
	luaapi.OpenJSON(L)
	return L
}

// eval runs `return <expr>` and returns the value.
func eval(t testing.TB, L *lua.LState, expr string) lua.LValue {
	t.Helper()
	require.NoError(t, L.DoString("return "+expr))
	v := L.Get(-1)
	L.Pop(1)
	return v
}

// nested returns Lua code for n tables nested through key x.
func nested(n int) string {
	return "(function() local r = {} local t = r for i = 2, " + strconv.Itoa(n) +
		" do t.x = {} t = t.x end return r end)()"
}

func TestEncodeJSON(t *testing.T) {
	tests := []struct{ name, expr, want string }{
		{"nil", `nil`, `null`},
		{"bool", `true`, `true`},
		{"string no HTML escaping", `"a\"b<>&"`, `"a\"b<>&"`},
		{"utf8", `"héllo"`, `"héllo"`},
		{"control char", `"\1"`, `"\u0001"`},
		{"invalid utf8 replaced", `"\255"`, `"\ufffd"`},
		{"integer", `3`, `3`},
		{"integral float", `3.0`, `3`},
		{"negative fraction", `-0.5`, `-0.5`},
		{"shortest float", `0.1`, `0.1`},
		{"2^53", `2^53`, `9007199254740992`},
		{"2^62 exact", `2^62`, `4611686018427387904`},
		{"huge", `1e300`, `1e+300`},
		{"empty table is object", `{}`, `{}`},
		{"empty array_mt", `setmetatable({}, json.array_mt)`, `[]`},
		{"empty object_mt", `setmetatable({}, json.object_mt)`, `{}`},
		{"sequence is array", `{1, 2, 3}`, `[1,2,3]`},
		{"array_mt sequence", `setmetatable({"a"}, json.array_mt)`, `["a"]`},
		{"sorted keys", `{b = 1, a = {c = true}, ["x y"] = "z"}`, `{"a":{"c":true},"b":1,"x y":"z"}`},
		{"null in array", `{1, json.null, 3}`, `[1,null,3]`},
		{"null in object", `{a = json.null}`, `{"a":null}`},
		{"top-level null", `json.null`, `null`},
		{"shared subtable", `(function() local s = {1} return {a = s, b = s} end)()`, `{"a":[1],"b":[1]}`},
		{"object_mt integer keys", `setmetatable({[1] = "x", [10] = "y", a = 1}, json.object_mt)`, `{"1":"x","10":"y","a":1}`},
		{"foreign marker metatable", `setmetatable({}, {__jsontype = "array"})`, `[]`},
		{"other metatable ignored", `setmetatable({1}, {__index = {}})`, `[1]`},
		{"depth 200", nested(200), strings.Repeat(`{"x":`, 199) + `{}` + strings.Repeat(`}`, 199)},
		{"decoded {} round trip", `json.decode("{}")`, `{}`},
		{"decoded [] round trip", `json.decode("[]")`, `[]`},
		{"decoded nulls", `json.decode('[1,null,{"a":null,"b":[]}]')`, `[1,null,{"b":[]}]`},
		{"decoded big int", `json.decode("12345678901234567890")`, `"12345678901234567890"`},
		{"lua-side encode", `json.encode({n = 1})`, `"{\"n\":1}"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			L := newJSONState(t)
			got, err := luaapi.EncodeJSON(eval(t, L, tc.expr))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}
}

func TestEncodeJSONErrors(t *testing.T) {
	tests := []struct{ name, expr, path, reason string }{
		{"function", `{args = {files = {"a", "b", function() end}}}`, `$.args.files[3]`, "cannot encode function"},
		{"NaN", `{x = 0/0}`, `$.x`, "cannot encode NaN"},
		{"+Inf", `{x = {1/0}}`, `$.x[1]`, "cannot encode +Inf"},
		{"-Inf", `{-1/0}`, `$[1]`, "cannot encode -Inf"},
		{"thread", `{["my key"] = {coroutine.create(function() end)}}`, `$["my key"][1]`, "cannot encode thread"},
		{"userdata", `{u = ud}`, `$.u`, "cannot encode userdata"},
		{"channel", `{c = ch}`, `$.c`, "cannot encode channel"},
		{"mixed keys", `{1, 2, a = 3}`, `$`, "table mixes integer keys and string keys"},
		{"sparse", `{o = {[1] = 1, [3] = 3}}`, `$.o`, "sparse array: 2 elements but index 3 is used"},
		{"hole from nil", `(function() local t = {1, 2, 3} t[2] = nil return t end)()`, `$`, "sparse array"},
		{"index 0", `{[0] = "z"}`, `$`, "array index 0 out of range"},
		{"float key", `{[1.5] = 1}`, `$`, "unsupported table key 1.5"},
		{"bool key", `{[true] = 1}`, `$`, "unsupported table key of type boolean"},
		{"table key", `{[{}] = 1}`, `$`, "unsupported table key of type table"},
		{"array_mt with string key", `setmetatable({1, a = 1}, json.array_mt)`, `$`, "table marked as array has string keys"},
		{"array_mt sparse", `setmetatable({[2] = 1}, json.array_mt)`, `$`, "sparse array"},
		{"object_mt duplicate", `setmetatable({[1] = "a", ["1"] = "b"}, json.object_mt)`, `$`, `duplicate object key "1"`},
		{"cycle", `(function() local t = {a = {}} t.a.b = t return t end)()`, `$.a.b`, "cycle: table refers back to $"},
		{"inner cycle", `(function() local t = {{}} t[1][1] = t[1] return {t} end)()`, `$[1][1][1]`, "cycle: table refers back to $[1][1]"},
		{"depth 201", nested(201), "$" + strings.Repeat(".x", 200), "nested deeper than 200 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			L := newJSONState(t)
			L.SetGlobal("ud", L.NewUserData())
			L.SetGlobal("ch", lua.LChannel(make(chan lua.LValue)))
			v := eval(t, L, tc.expr)
			for _, encode := range []func() error{
				func() error { _, err := luaapi.EncodeJSON(v); return err },
				func() error { _, err := luaapi.FromLua(v); return err },
			} {
				err := encode()
				var ce *luaapi.ConvertError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, tc.path, ce.Path)
				require.Contains(t, ce.Reason, tc.reason)
				require.Equal(t, ce.Path+": "+ce.Reason, err.Error())
			}
		})
	}
}

func TestLuaEncodeRaisesWithPath(t *testing.T) {
	L := newJSONState(t)
	err := L.DoString(`json.encode({args = {files = {"a", print}}})`)
	require.ErrorContains(t, err, "json.encode: $.args.files[2]: cannot encode function")
	err = L.DoString(`json.decode("{")`)
	require.ErrorContains(t, err, "json.decode: invalid JSON")
}

func TestDecodeJSON(t *testing.T) {
	L := newJSONState(t)
	mod := L.GetGlobal("json").(*lua.LTable)
	null, arrayMT, objectMT := mod.RawGetString("null"), mod.RawGetString("array_mt"), mod.RawGetString("object_mt")
	decode := func(s string) lua.LValue {
		v, err := luaapi.DecodeJSON(L, []byte(s))
		require.NoError(t, err, s)
		return v
	}

	arr := decode(` [1, null, 3] `).(*lua.LTable)
	require.Equal(t, 3, arr.Len())
	require.Equal(t, null, arr.RawGetInt(2))
	require.True(t, luaapi.IsJSONNull(arr.RawGetInt(2)))
	require.Equal(t, arrayMT, arr.Metatable)

	obj := decode(`{"a": null, "b": 1, "c": {}}`).(*lua.LTable)
	require.Equal(t, lua.LNil, obj.RawGetString("a"))
	require.Equal(t, lua.LNumber(1), obj.RawGetString("b"))
	require.Equal(t, objectMT, obj.Metatable)
	require.Equal(t, objectMT, obj.RawGetString("c").(*lua.LTable).Metatable)

	scalars := []struct {
		in   string
		want lua.LValue
	}{
		{`null`, null},
		{`true`, lua.LTrue},
		{`"x\u00e9"`, lua.LString("xé")},
		{"\"\xff\"", lua.LString("\uFFFD")},
		{`1.5`, lua.LNumber(1.5)},
		{`-0`, lua.LNumber(0)},
		{`1e2`, lua.LNumber(100)},
		{`9007199254740992`, lua.LNumber(1 << 53)},
		{`-9007199254740992`, lua.LNumber(-(1 << 53))},
		{`9007199254740993`, lua.LString("9007199254740993")},
		{`-9007199254740993`, lua.LString("-9007199254740993")},
		{`123456789012345678901234567890`, lua.LString("123456789012345678901234567890")},
		{`1e400`, lua.LString("1e400")},
		{`1e-400`, lua.LNumber(0)},
	}
	for _, tc := range scalars {
		require.Equal(t, tc.want, decode(tc.in), tc.in)
	}

	// Lua sees positions, # and the sentinel.
	require.NoError(t, L.DoString(`
		local a = json.decode('[1,null,3]')
		assert(#a == 3 and a[2] == json.null and a[3] == 3)
		assert(getmetatable(a) == json.array_mt)
		assert(getmetatable(json.decode('{}')) == json.object_mt)
		assert(json.decode('null') == json.null)
		assert(json.decode('{"a":null}').a == nil)
		local keys = ""
		for k in pairs(json.decode('{"b":1,"c":2,"a":3}')) do keys = keys .. k end
		assert(keys == "abc", "pairs order " .. keys)
	`))
}

func TestDecodeJSONErrors(t *testing.T) {
	tests := []struct{ name, in, path, reason string }{
		{"empty", ``, "", "invalid JSON: empty input"},
		{"blank", "  \n", "", "invalid JSON: empty input"},
		{"truncated", `{"a":`, "", "invalid JSON: unexpected EOF"},
		{"syntax", `[1,]`, "", "invalid JSON at offset 4: invalid character ']'"},
		{"trailing value", `1 2`, "", "invalid JSON: unexpected data after the value"},
		{"trailing garbage", `{"a":1}x`, "", "invalid JSON: unexpected data after the value"},
		{"depth 201", strings.Repeat("[", 201) + strings.Repeat("]", 201), "$" + strings.Repeat("[1]", 200), "nested deeper than 200 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			L := newJSONState(t)
			v, err := luaapi.DecodeJSON(L, []byte(tc.in))
			require.Equal(t, lua.LNil, v)
			var ce *luaapi.ConvertError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.path, ce.Path)
			require.Contains(t, ce.Reason, tc.reason)
		})
	}
	t.Run("depth 200 ok", func(t *testing.T) {
		in := strings.Repeat("[", 200) + strings.Repeat("]", 200)
		v, err := luaapi.DecodeJSON(newJSONState(t), []byte(in))
		require.NoError(t, err)
		out, err := luaapi.EncodeJSON(v)
		require.NoError(t, err)
		require.Equal(t, in, string(out))
	})
}

func TestToLua(t *testing.T) {
	type args struct {
		Path  string   `json:"path"`
		Tags  []string `json:"tags,omitempty"`
		Limit *int     `json:"limit"`
	}
	tests := []struct {
		name string
		in   any
		want string // EncodeJSON of the result
	}{
		{"nil", nil, `null`},
		{"map with nils", map[string]any{"a": nil, "b": []any{nil, 1}}, `{"b":[null,1]}`},
		{"float32", float32(1.5), `1.5`},
		{"int", 7, `7`},
		{"int64 safe", int64(-1 << 53), `-9007199254740992`},
		{"int64 big", int64(1<<53 + 1), `"9007199254740993"`},
		{"uint64 big", uint64(math.MaxUint64), `"18446744073709551615"`},
		{"json.Number", json.Number("42"), `42`},
		{"json.Number big", json.Number("90071992547409930"), `"90071992547409930"`},
		{"raw message", json.RawMessage(`{"x":[],"y":{}}`), `{"x":[],"y":{}}`},
		{"raw null", json.RawMessage(`null`), `null`},
		{"empty slice", []any{}, `[]`},
		{"empty map", map[string]any{}, `{}`},
		{"struct", args{Path: "/tmp"}, `{"path":"/tmp"}`},
		{"struct in slice", []any{args{Path: "a", Tags: []string{"x"}}}, `[{"path":"a","tags":["x"]}]`},
		{"lua value", lua.LString("s"), `"s"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			L := newJSONState(t)
			lv, err := luaapi.ToLuaChecked(L, tc.in)
			require.NoError(t, err)
			got, err := luaapi.EncodeJSON(lv)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			got, err = luaapi.EncodeJSON(luaapi.ToLua(L, tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
		})
	}

	L := newJSONState(t)
	require.Equal(t, lua.LNil, luaapi.ToLua(L, nil))
	require.Equal(t, lua.LNil, luaapi.ToLua(L, json.RawMessage(`null`)))
	require.Equal(t, lua.LString("9007199254740993"), luaapi.ToLua(L, int64(1<<53+1)))
	L.SetGlobal("v", luaapi.ToLua(L, []any{nil}))
	require.NoError(t, L.DoString(`assert(getmetatable(v) == json.array_mt and v[1] == json.null)`))
}

func TestToLuaErrors(t *testing.T) {
	loop := map[string]any{}
	loop["self"] = []any{loop}
	tests := []struct {
		name       string
		in         any
		path, want string
	}{
		{"channel", map[string]any{"c": make(chan int)}, `$.c`, "cannot convert chan int"},
		{"bad number", []any{json.Number("abc")}, `$[1]`, `invalid number "abc"`},
		{"bad raw", map[string]any{"r": json.RawMessage(`{`)}, `$.r`, "json.RawMessage: invalid JSON"},
		{"self reference", loop, "$" + strings.Repeat(`.self[1]`, 100), "nested deeper than 200 levels"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			L := newJSONState(t)
			_, err := luaapi.ToLuaChecked(L, tc.in)
			var ce *luaapi.ConvertError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.path, ce.Path)
			require.Contains(t, ce.Reason, tc.want)
			require.Equal(t, lua.LNil, luaapi.ToLua(L, tc.in))
		})
	}
}

func TestFromLua(t *testing.T) {
	tests := []struct {
		expr string
		want any
	}{
		{`nil`, nil},
		{`json.null`, nil},
		{`"s"`, "s"},
		{`false`, false},
		{`3`, int64(3)},
		{`-2^63`, int64(math.MinInt64)},
		{`2^63`, float64(1 << 63)},
		{`1.5`, 1.5},
		{`json.decode("{}")`, map[string]any{}},
		{`json.decode("[]")`, []any{}},
		{`{}`, map[string]any{}},
		{`{1, {a = true, b = json.null}}`, []any{int64(1), map[string]any{"a": true, "b": nil}}},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := luaapi.FromLua(eval(t, newJSONState(t), tc.expr))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestOpenJSON(t *testing.T) {
	L := newJSONState(t)
	mod := luaapi.OpenJSON(L) // a second call reuses the state's sentinels
	require.Equal(t, L.GetGlobal("json").(*lua.LTable).RawGetString("null"), mod.RawGetString("null"))
	require.Equal(t, mod, L.GetGlobal("json"))
	require.Equal(t, mod.RawGetString("null"), luaapi.JSONNull(L))
	require.Equal(t, mod.RawGetString("array_mt"), lua.LValue(luaapi.JSONArrayMetatable(L)))
	require.NoError(t, L.DoString(`
		assert(tostring(json.null) == "json.null")
		assert(type(json.null) == "userdata")
		assert(getmetatable(json.null) == "json.null")
		assert(not pcall(setmetatable, json.null, {}))
		for _, s in ipairs({'{}', '[]', '[1,null,"x"]', '{"a":[{}],"b":{"c":[]}}', '1.5', '"s"', 'null'}) do
			assert(json.encode(json.decode(s)) == s, s)
		end
	`))

	// Sentinels are per state, but every state's json.null is recognised.
	other := newJSONState(t)
	otherNull := other.GetGlobal("json").(*lua.LTable).RawGetString("null")
	require.NotEqual(t, mod.RawGetString("null"), otherNull)
	got, err := luaapi.FromLua(otherNull)
	require.NoError(t, err)
	require.Nil(t, got)
}

// normalize turns an encoding/json (UseNumber) decode into comparable values:
// object keys with null values are dropped (they are absent in Lua) and
// numbers become float64, except, when bigToString is set, integer literals
// beyond ±2^53 and numbers beyond the float64 range, which the Lua side keeps
// as their text.
func normalize(v any, bigToString bool) any {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		f, err := strconv.ParseFloat(s, 64)
		if bigToString && (err != nil || !strings.ContainsAny(s, ".eE")) {
			n, ok := new(big.Int).SetString(s, 10)
			if err != nil || (ok && n.CmpAbs(big.NewInt(1<<53)) > 0) {
				return s
			}
		}
		return f
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normalize(e, bigToString)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e != nil {
				out[k] = normalize(e, bigToString)
			}
		}
		return out
	}
	return v
}

// depth is the nesting depth of arrays/objects in v.
func depth(v any) int {
	d := 0
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			d = max(d, depth(e))
		}
		return d + 1
	case map[string]any:
		for _, e := range v {
			d = max(d, depth(e))
		}
		return d + 1
	}
	return 0
}

func decodeStd(t *testing.T, data []byte) any {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

func FuzzJSONRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `null`, `[1,null,3]`, `{"a":null,"b":[{}]}`, `-0`, `1e400`, `1e20`,
		`9007199254740993`, `"\ud800"`, "\"\xff\"", `{"a":1,"a":null}`, `[1.5e300,1e-400,0.1]`,
		`{"args":{"files":["a","b"],"n":3,"opts":{"deep":[[[]]]}}}`, `"<&>\u2028"`,
		strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200), strings.Repeat(`{"a":[`, 101) + strings.Repeat(`]}`, 101),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		std := decodeStd(t, data)
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		lv, err := luaapi.DecodeJSON(L, data)
		if depth(std) > luaapi.MaxJSONDepth {
			var ce *luaapi.ConvertError
			require.ErrorAs(t, err, &ce)
			return
		}
		require.NoError(t, err)
		_ = luaapi.Pretty(lv)
		out, err := luaapi.EncodeJSON(lv)
		require.NoError(t, err)
		require.True(t, json.Valid(out), "%s", out)
		require.Equal(t, normalize(std, true), normalize(decodeStd(t, out), false), "in %s out %s", data, out)

		// A second trip reaches a fixed point.
		lv2, err := luaapi.DecodeJSON(L, out)
		require.NoError(t, err)
		out2, err := luaapi.EncodeJSON(lv2)
		require.NoError(t, err)
		lv3, err := luaapi.DecodeJSON(L, out2)
		require.NoError(t, err)
		out3, err := luaapi.EncodeJSON(lv3)
		require.NoError(t, err)
		require.Equal(t, string(out2), string(out3))
	})
}

// FuzzFromLuaNoPanic builds arbitrary Lua tables (cycles, shared tables,
// markers, bad keys and values) from the input bytes and checks that FromLua,
// EncodeJSON and Pretty never panic and agree with each other.
func FuzzFromLuaNoPanic(f *testing.F) {
	f.Add([]byte{0, 1, 1, 2, 2, 3})
	f.Add([]byte{0, 0, 5, 0, 4, 1, 2, 7})
	f.Add([]byte{6, 3, 6, 4, 1, 9, 3, 0, 4, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		L := lua.NewState(lua.Options{SkipOpenLibs: true})
		defer L.Close()
		mod := luaapi.OpenJSON(L)
		tables := []*lua.LTable{L.NewTable()}
		scalars := []lua.LValue{
			lua.LNumber(1), lua.LNumber(2.5), lua.LString("s"), lua.LTrue, mod.RawGetString("null"),
			lua.LNumber(math.NaN()), lua.LNumber(math.Inf(1)), L.NewFunction(func(*lua.LState) int { return 0 }),
			L.NewUserData(), lua.LNumber(1 << 60),
		}
		keys := []lua.LValue{lua.LNumber(1), lua.LNumber(2), lua.LNumber(3), lua.LString("a"),
			lua.LString("1"), lua.LNumber(0), lua.LNumber(1.5), lua.LFalse}
		for i := 0; i+2 < len(data); i += 3 {
			op, a, b := data[i], int(data[i+1]), int(data[i+2])
			dst := tables[a%len(tables)]
			key := keys[b%len(keys)]
			switch op % 6 {
			case 0: // new child table
				child := L.NewTable()
				tables = append(tables, child)
				dst.RawSet(key, child)
			case 1: // link an existing table: shared or cyclic
				dst.RawSet(key, tables[b%len(tables)])
			case 2, 3:
				dst.RawSet(key, scalars[b%len(scalars)])
			case 4:
				dst.Metatable = []lua.LValue{lua.LNil, mod.RawGetString("array_mt"), mod.RawGetString("object_mt")}[b%3]
			case 5:
				dst.RawSet(key, lua.LNil)
			}
		}
		root := tables[0]
		_ = luaapi.Pretty(root)
		g, err := luaapi.FromLua(root)
		out, encErr := luaapi.EncodeJSON(root)
		if err != nil {
			var ce *luaapi.ConvertError
			require.ErrorAs(t, err, &ce)
			require.True(t, strings.HasPrefix(ce.Path, "$"), ce.Path)
			require.Equal(t, err.Error(), encErr.Error())
			return
		}
		require.NoError(t, encErr)
		require.True(t, json.Valid(out))
		want, err := json.Marshal(g)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(out))
		_, err = luaapi.DecodeJSON(L, out)
		require.NoError(t, err)
	})
}

// toolArgs is a typical tools/call argument object.
const toolArgs = `{"path":"/home/user/project/src/main.go","content":"package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",` +
	`"options":{"createDirs":true,"mode":420,"encoding":"utf-8","exclude":["*.log","node_modules",".git"]},"limit":100,"dryRun":false}`

func BenchmarkDecodeJSON(b *testing.B) {
	L := newJSONState(b)
	data := []byte(toolArgs)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := luaapi.DecodeJSON(L, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeJSON(b *testing.B) {
	L := newJSONState(b)
	v, err := luaapi.DecodeJSON(L, []byte(toolArgs))
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := luaapi.EncodeJSON(v); err != nil {
			b.Fatal(err)
		}
	}
}
