package luaapi_test

// The sandbox's caps on builtins that ignore the slice budget, so that
// non-interruptible work in a hook cannot stall or exhaust the host: one
// Go call such as string.rep("x", 1e9) runs to its end whatever the
// LState context says, so it is refused up front with a clear message.
// The pattern functions poll the context instead (patterns_test.go); only
// their subject and pattern sizes are capped.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
)

// quickFail Execs src, which must be refused (its error says why) rather
// than run: the uncapped builtin would take 1 GiB (string.rep("x", 1e9)) or
// seconds to hours (the patterns). The deadline, generous for a busy
// machine, only keeps such a run from hanging the test.
func quickFail(t *testing.T, r *testRuntime, src string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := r.Exec(ctx, src, "test")
	require.Error(t, err, "chunk %q", src)
	require.NoError(t, ctx.Err(), "chunk %q was stopped by the deadline, not refused", src)
	return err.Error()
}

func TestStringRepCap(t *testing.T) {
	r := newTestRuntime(t, nil)
	tests := []struct {
		name, src string
		want      string
	}{
		{"function", `return string.rep("x", 1e9)`, "test:1: string.rep: the result would be 1000000000 bytes; the limit is 16 MiB"},
		{"method", `return ("x"):rep(1e9)`, "test:1: string.rep: the result would be 1000000000 bytes; the limit is 16 MiB"},
		{"long string times small count", `local s = ("x"):rep(1e6) return s:rep(17)`, "string.rep: the result would be 17000000 bytes"},
		{"nested", `return ("ab"):rep(8e6):rep(2)`, "string.rep: the result would be 32000000 bytes"},
		{"under pcall", `local ok, err = pcall(string.rep, "x", 1e9) error(err, 0)`, "string.rep: the result would be 1000000000 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := quickFail(t, r, tt.src)
			require.True(t, strings.HasPrefix(msg, tt.want) || strings.Contains(msg, tt.want), "got %q, want %q", msg, tt.want)
		})
	}
	// What stays allowed works as in plain Lua.
	require.Equal(t, []string{"xxx", "", "", "2000", "16777216"}, r.run(t, `
		return string.rep("x", 3), string.rep("x", 0), string.rep("x", -5), #("ab"):rep(1000), #string.rep("y", 16 * 1024 * 1024)`))
}

// Builtins that return many values are capped as standard Lua's stack
// caps them: gopher-lua grew its stack for unpack({}, 1, 1e8) for minutes
// before failing, with the loop held all along.
func TestManyResultsCap(t *testing.T) {
	r := newTestRuntime(t, nil)
	for _, src := range []string{
		`return select("#", unpack({}, 1, 1e8))`,
		`return select("#", string.byte(string.rep("x", 1e7)))`,
		`return select("#", ("x"):rep(1e7):byte(1, -1))`,
	} {
		require.Contains(t, quickFail(t, r, src), "at most 8000 can be returned at once", src)
	}
	require.Equal(t, []string{"8000", "3", "1", "8000", "2", "0"}, r.run(t, `
		local t = {} for i = 1, 9000 do t[i] = i end
		local s = ("x"):rep(9000)
		return select("#", unpack(t, 1, 8000)), select("#", unpack({1, 2, 3})), select("#", s:byte(5)),
			select("#", s:byte(1001, -1)), select("#", ("ab"):byte(1, 2)), select("#", unpack({}, 5, 1))`))
}

// pathological is a pattern that backtracks exponentially against 20 a's
// and a b: gopher-lua's matcher runs through it for hours; the sandbox's
// stops at the slice budget or when the chunk is cancelled
// (patterns_test.go).
const pathological = `('a*'):rep(20) .. 'c'`

// TestSandboxPatternSizeCaps: a huge subject or pattern is refused before
// matching; patterns with many repetition items are not (the matcher is
// bounded by time instead).
func TestSandboxPatternSizeCaps(t *testing.T) {
	r := newTestRuntime(t, nil)
	for _, tt := range []struct{ src, want string }{
		{`return string.find(("a"):rep(2 * 1024 * 1024), "b")`, "test:1: string.find: the subject is 2097152 bytes; the limit is 1 MiB"},
		{`return ("a"):rep(2 * 1024 * 1024):find("b", 1, true)`, "test:1: string.find: the subject is 2097152 bytes; the limit is 1 MiB"},
		{`return string.match("a", ("a"):rep(5000))`, "test:1: string.match: the pattern is 5000 bytes; the limit is 4 KiB"},
		{`return ("a"):rep(1024 * 1024 + 1):gmatch(".")`, "test:1: string.gmatch: the subject is 1048577 bytes"},
		{`return ("a"):rep(1024 * 1024 + 1):gsub(".", "")`, "test:1: string.gsub: the subject is 1048577 bytes"},
		{`return string.gfind(("a"):rep(1024 * 1024 + 1), ".")`, "test:1: string.gmatch: the subject is 1048577 bytes"},
		// gsub's result is capped like string.rep's.
		{`return (("a"):rep(1024):gsub(".", ("x"):rep(16 * 1024 + 1)))`, "test:1: string.gsub: the result would exceed 16 MiB"},
		{`local big = ("y"):rep(1024 * 1024) return (("a"):rep(17):gsub(".", function() return big end))`, "string.gsub: the result would exceed 16 MiB"},
	} {
		require.Contains(t, quickFail(t, r, tt.src), tt.want, tt.src)
	}
	require.Equal(t, []string{"1", "16777216"}, r.run(t, `
		local s = ("a"):rep(1024 * 1024) return s:find("a"), #(("a"):rep(1024):gsub(".", ("x"):rep(16 * 1024)))`))
	require.Equal(t, []string{"21", "21"}, r.run(t, `return (("a"):rep(20) .. "c"):find(("a*"):rep(20) .. "c", 21)`))
}

// TestOrdinaryPatternsWork: the caps do not get in the way of the patterns
// people write; results are those of plain Lua.
func TestOrdinaryPatternsWork(t *testing.T) {
	r := newTestRuntime(t, nil)
	tests := []struct {
		name, src string
		want      []string
	}{
		{"find plain", `return string.find("a.b.c", ".", 1, true)`, []string{"2", "2"}},
		{"find pattern", `return ("hello world"):find("o w")`, []string{"5", "7"}},
		{"find with captures", `return string.find("key = value", "(%w+)%s*=%s*(%w+)")`, []string{"1", "11", "key", "value"}},
		{"match", `return ("v1.22.3"):match("^v(%d+)%.(%d+)%.(%d+)$")`, []string{"1", "22", "3"}},
		{"match no result", `return (("abc"):match("%d+"))`, []string{"nil"}},
		{"gmatch", `local out = {} for k, v in ("a=1, b=2, c=3"):gmatch("(%w+)=(%w+)") do out[#out + 1] = k .. v end return table.concat(out, " ")`,
			[]string{"a1 b2 c3"}},
		{"gsub string", `return ("hello world"):gsub("o", "0")`, []string{"hell0 w0rld", "2"}},
		{"gsub function", `return (("a-b-c"):gsub("%a", string.upper))`, []string{"A-B-C"}},
		{"gsub table", `return (("$x and $y"):gsub("%$(%w+)", {x = "1", y = "2"}))`, []string{"1 and 2"}},
		{"gsub limit", `return ("aaa"):gsub("a", "b", 2)`, []string{"bba", "2"}},
		{"trim", `return (("  padded  "):match("^%s*(.-)%s*$"))`, []string{"padded"}},
		{"balanced", `return ("f(a(b)c) d"):match("%b()")`, []string{"(a(b)c)"}},
		{"sets and ranges", `return ("2024-01-02T03:04:05Z"):match("^([0-9]+)-([0-9]+)-([0-9]+)T([0-9]+):([0-9]+):([0-9]+)")`,
			[]string{"2024", "01", "02", "03", "04", "05"}},
		{"email-like", `return ("jo.doe-x@mail.example.org"):match("^([a-zA-Z0-9._%-]+)@([a-zA-Z0-9.-]+)%.([a-zA-Z][a-zA-Z]+)$")`,
			[]string{"jo.doe-x", "mail.example", "org"}},
		{"escaped quantifiers", `return ("a*b+c-d"):find("%*b%+c%-")`, []string{"2", "6"}},
		{"twelve repetitions", `return (("ab"):rep(6):match(("a*b*"):rep(6)))`, []string{"abababababab"}},
		// Once refused by a cap on repetition items (12).
		{"many repetition items", `return ("GET /a/b HTTP/1.1 200 512 0.25s"):match("^%s*(%u+)%s+(%S+)%s+(%S+)%s+(%d+)%s+(%d+)%s+([%d.]+)s?%s*$")`,
			[]string{"GET", "/a/b", "HTTP/1.1", "200", "512", "0.25"}},
		{"quantifier characters in sets", `return ("a+b-c*d?"):gsub("[%+%-*?]", "")`, []string{"abcd", "4"}},
		// gsub over a large subject with a match per byte is linear:
		// gopher-lua's own gsub took minutes for this (see gsub in
		// sandbox.go).
		{"gsub every byte of 1 MiB", `local s, n = (("x"):rep(1024 * 1024 - 1)):gsub("x", "y") return #s, n, s:sub(1, 3)`,
			[]string{"1048575", "1048575", "yyy"}},
		{"gsub every byte with a function", `local s, n = (("ab"):rep(50000)):gsub(".", function(c) if c == "a" then return "A" end end) return #s, n, s:sub(1, 4)`,
			[]string{"100000", "100000", "AbAb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, r.run(t, tt.src))
		})
	}
}

// TestGsubMatchesGopherLua: the sandbox's own string.gsub (linear, see
// sandbox.go) gives what gopher-lua's gives, for every kind of replacement.
func TestGsubMatchesGopherLua(t *testing.T) {
	r := newTestRuntime(t, nil)
	plain := lua.NewState()
	defer plain.Close()
	exprs := []string{
		`("hello world"):gsub("o", "0")`,
		`("hello world"):gsub("(o)", "[%1]")`,
		`("hello world"):gsub("l+", "<%0>")`,
		`("hello world"):gsub("%w+", "%1!")`,
		`("hello world"):gsub("(%w+) (%w+)", "%2 %1")`,
		`("100%"):gsub("%%", "%%%%")`,
		`("a.b"):gsub("%.", "%x")`,
		`("abc"):gsub("b", "%")`,
		`("abc"):gsub("", "-")`,
		`("abc"):gsub("x*", "-")`,
		`("abc"):gsub("^a", "A")`,
		`("aaa"):gsub("^a", "A")`,
		`("abc"):gsub("c$", "C")`,
		`("aaaa"):gsub("a", "b", 2)`,
		`("aaaa"):gsub("a", "b", 0)`,
		`("abc"):gsub("()", "%1")`,
		`("abc"):gsub("()b()", "%1-%2")`,
		`("$x $y $z"):gsub("%$(%w+)", {x = "1", y = false})`,
		`("$x $y"):gsub("%$%w+", {["$x"] = 10})`,
		`("a b"):gsub("()%w", {[1] = "one", [3] = "three"})`,
		`("a b c"):gsub("%w", function(c) if c == "b" then return nil end return c:upper() end)`,
		`("a b c"):gsub("(%w)", function(c) return 42 end)`,
		`("k=v, x=y"):gsub("(%w+)=(%w+)", function(k, v) return v .. "=" .. k end)`,
		`("abc"):gsub("()(%w)", function(p, c) return p .. c end)`,
		`("abc"):gsub("%w", function() return {} end)`,
		`(""):gsub("", "x")`,
		`("no match"):gsub("%d", "#")`,
		`("héllo"):gsub("é", "e")`,
		`string.gsub(123, "2", "x")`,
		`("THE (quick) fox"):gsub("%f[%a]%a+", "w")`,
		`("f(a(b)c) g(d)"):gsub("%b()", "[]")`,
	}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			src := `local s, n = ` + expr + ` return s .. "|" .. n`
			require.NoError(t, plain.DoString(src), "gopher-lua")
			want := plain.Get(-1).String()
			plain.Pop(1)
			require.Equal(t, want, r.one(t, src))
		})
	}
	// Errors as in gopher-lua.
	for _, tt := range []struct{ src, want string }{
		{`return ("abc"):gsub("b", "%2")`, "invalid capture index"},
		{`return ("abc"):gsub("(b", "x")`, "unfinished capture"},
		{`return ("abc"):gsub("b", true)`, "bad argument #3"},
	} {
		require.Contains(t, r.fail(t, tt.src).Message, tt.want, tt.src)
	}
}
