package luaapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/luaapi"
)

func TestPretty(t *testing.T) {
	tests := []struct{ name, expr, want string }{
		{"nil", `nil`, `nil`},
		{"bool", `true`, `true`},
		{"integer", `42`, `42`},
		{"float", `1.5`, `1.5`},
		{"string", `"hi"`, `"hi"`},
		{"escapes", `"a\"b\\c\n\t\0d\27e\127"`, `"a\"b\\c\n\t\000d\027e\127"`},
		{"utf8 kept, invalid escaped", `"é\255"`, `"é\255"`},
		{"non-printable rune escaped", `"\226\128\139"`, `"\226\128\139"`}, // U+200B
		{"OSC title and CSI in a value", `{text = "A\27]0;PWNED\7\27[2JB"}`, "{\n  text = \"A\\027]0;PWNED\\a\\027[2JB\",\n}"},
		{"C1 control and bidi override", `{"\194\155", "\226\128\174"}`, `{ "\194\155", "\226\128\174" }`}, // U+009B, U+202E
		{"server-chosen key", `{["\27]0;t\7"] = 1}`, "{\n  [\"\\027]0;t\\a\"] = 1,\n}"},
		{"numbers", `{0.1, -0, 1e300, 2^53, 0/0, 1/0, -1/0, 1e-7, 123456.75}`,
			`{ 0.1, 0, 1e+300, 9007199254740992, nan, inf, -inf, 1e-07, 123456.75 }`},
		{"empty", `{}`, `{}`},
		{"short array", `{1, 2, 3}`, `{ 1, 2, 3 }`},
		{"specials", `{json.null, print, coroutine.create(function() end), ud}`,
			`{ json.null, <function>, <thread>, <userdata> }`},
		{"top-level null", `json.null`, `json.null`},
		{"long array", `{"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc", "dddddddddddd", "eeeeeeeeeeee"}`, `{
  "aaaaaaaaaaaa",
  "bbbbbbbbbbbb",
  "cccccccccccc",
  "dddddddddddd",
  "eeeeeeeeeeee",
}`},
		{"array with table", `{1, {2}, {}}`, `{
  1,
  { 2 },
  {},
}`},
		{"object", `{b = 1, a = "x", [2] = true, [1] = false, ["my key"] = 1, ["end"] = 2}`, `{
  [1] = false,
  [2] = true,
  a = "x",
  b = 1,
  ["end"] = 2,
  ["my key"] = 1,
}`},
		{"nested", `{name = "srv", tools = {"a", "b"}, cfg = {port = 80, tags = {}, on = {x = true}}}`, `{
  cfg = {
    on = {
      x = true,
    },
    port = 80,
    tags = {},
  },
  name = "srv",
  tools = { "a", "b" },
}`},
		{"key types", `{[true] = 1, [false] = 0, [1.5] = "f", [-3] = "n", x = 1, [{}] = 2}`, `{
  [-3] = "n",
  [1.5] = "f",
  x = 1,
  [false] = 0,
  [true] = 1,
  [<table>] = 2,
}`},
		{"cycle", `(function() local t = {name = "t", list = {}} t.self = t t.list[1] = t return t end)()`, `{
  list = {
    <cycle>,
  },
  name = "t",
  self = <cycle>,
}`},
		{"shared is not a cycle", `(function() local s = {1} return {a = s, b = s} end)()`, `{
  a = { 1 },
  b = { 1 },
}`},
		{"decoded json", `json.decode('{"args":{"files":["a",null]},"n":1}')`, `{
  args = {
    files = { "a", json.null },
  },
  n = 1,
}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			L := newJSONState(t)
			L.SetGlobal("ud", L.NewUserData())
			require.Equal(t, tc.want, luaapi.Pretty(eval(t, L, tc.expr)))
		})
	}
}

func TestPrettyDepthLimit(t *testing.T) {
	L := newJSONState(t)
	got := luaapi.Pretty(eval(t, L, nested(25)))
	var want strings.Builder
	for i := range 20 {
		want.WriteString("{\n" + strings.Repeat("  ", i+1) + "x = ")
	}
	want.WriteString("{...},\n")
	for i := 19; i >= 0; i-- {
		want.WriteString(strings.Repeat("  ", i) + "}")
		if i > 0 {
			want.WriteString(",\n")
		}
	}
	require.Equal(t, want.String(), got)
}

func TestPrettyInlineWidth(t *testing.T) {
	// { "xx...x" } is exactly 72 characters: inline; one more: multi-line.
	s72 := lua.LString(strings.Repeat("x", 72-6))
	L := newJSONState(t)
	tbl := L.NewTable()
	tbl.Append(s72)
	require.Len(t, luaapi.Pretty(tbl), 72)
	tbl.RawSetInt(1, s72+"x")
	require.Equal(t, "{\n  \""+string(s72)+"x\",\n}", luaapi.Pretty(tbl))
}
