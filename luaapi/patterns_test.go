package luaapi_test

// The sandbox's string.find, match, gmatch and gsub (patterns.go): a
// pathological pattern is stopped by the slice budget or by cancelling
// its chunk, as a runaway loop is, and otherwise they give what
// gopher-lua's give.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
)

// pathologicalCalls run the exponentially backtracking pattern (see
// pathological) through every pattern function, as Lua statements over
// locals s and p.
var pathologicalCalls = []struct{ name, stmt string }{
	{"string.find", `string.find(s, p)`},
	{"method match", `s:match(p)`},
	{"gmatch loop", `for _ in s:gmatch(p) do end`},
	{"gmatch by hand", `local it = string.gmatch(s, p) it()`},
	{"gsub", `s:gsub(p, "x")`},
	{"gsub with a function", `s:gsub(p, function() end)`},
	{"under pcall", `local ok, err = pcall(string.find, s, p) print("pcall returned " .. tostring(err))`},
}

const pathologicalLocals = `local s, p = ("a"):rep(20) .. "b", ` + pathological

// TestPatternStoppedByBudget: a hook whose pattern would backtrack for
// hours is stopped at its slice budget and reported as a hook_error with
// the budget error and the hook's traceback, as a `while true do end` is;
// meanwhile another server's events reach their hook and a chunk still
// runs. pcall does not keep it alive: the error comes back at the next
// instruction.
func TestPatternStoppedByBudget(t *testing.T) {
	h := newHookRuntime(t, 0, nil) // the default budget, 100ms
	h.run(t, `mcp_on("notification", function(e) print("good got " .. e.i) end, {server = "good"})`)
	for i, c := range pathologicalCalls {
		t.Run(c.name, func(t *testing.T) {
			server := fmt.Sprint("bad", i)
			id := h.id(t, `mcp_on("notification", function(e)
	`+pathologicalLocals+`
	`+c.stmt+`
end, {server = "`+server+`"})`)
			h.publish(server, nil)
			h.publish("good", events.Fields{"i": i})
			h.lines.waitLine(t, 0, fmt.Sprint("good got ", i))
			e := h.hookError(t, id)
			msg := e.Text("error")
			require.Contains(t, msg, "100ms", msg)
			require.Contains(t, msg, "budget", msg)
			tb := e.Text("traceback")
			require.Contains(t, tb, "stack traceback:")
			require.Contains(t, tb, "test:3:", "the hook's line:\n%s", tb)
			if c.name == "string.find" {
				require.Contains(t, tb, "[G]: in function 'find'")
			}
			require.Equal(t, "still runs", h.one(t, `return "still runs"`))
		})
	}
	for _, l := range h.lines.all() {
		require.NotContains(t, l, "pcall returned", "the hook ran on after its budget")
	}
}

// TestPatternStoppedByCancel: a chunk (startup.lua, a REPL line) has no
// budget; cancelling its context, as Ctrl-C does, stops the match, and the
// chunk reports the interruption with its cause and traceback.
func TestPatternStoppedByCancel(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	for i, c := range pathologicalCalls {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := h.Exec(ctx, fmt.Sprintf("%s\nprint(\"matching %d\")\n%s", pathologicalLocals, i, c.stmt), "test")
				errc <- err
			}()
			h.lines.waitLine(t, 0, fmt.Sprint("matching ", i))
			cancel()
			var err error
			select {
			case err = <-errc:
			case <-time.After(waitDeadline):
				t.Fatal("the chunk was not stopped by its cancellation")
			}
			require.ErrorIs(t, err, context.Canceled)
			var le *luaapi.Error
			require.ErrorAs(t, err, &le)
			require.Equal(t, "interrupted", le.Message)
			require.Contains(t, le.Traceback, "test:3:")
			require.Equal(t, "ok", h.one(t, `return "ok"`))
		})
	}
	// A deadline on the chunk works the same way.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := h.Exec(ctx, pathologicalLocals+` return s:find(p)`, "test")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// patternParity are expressions compared between the sandbox and a plain
// gopher-lua state. show renders all the values of an expression with
// their types; gm lists what a generic for over gmatch sees; try runs an
// expression under pcall, for errors.
var patternParity = []string{
	// find: plain, init (negative, zero, past the end), special characters
	`show(("hello world"):find("o"))`,
	`show(("hello world"):find("o", 6))`,
	`show(("hello world"):find("o", -3))`,
	`show(("hello world"):find("o", -100))`,
	`show(("hello world"):find("o", 0))`,
	`show(("hello world"):find("o", 100))`,
	`show(("hello world"):find("l", 12))`,
	`show(("hello"):find("", 3))`,
	`show((""):find(""))`,
	`show((""):find("a"))`,
	`show(("a.b.c"):find(".", 1, true))`,
	`show(("a.b.c"):find(".", 3, true))`,
	`show(("a.b.c"):find(".", -1, true))`,
	`show(("a.b.c"):find("%.", 1, false))`,
	`show(("a.b.c"):find(".", 1, nil))`,
	`show(("a+b"):find("+", 1, true))`,
	`show(("a+b"):find("a+", 1, true))`,
	`show(("a.b"):find(".", 1, true, "extra"))`,
	`show(("abc"):find("[b]", 1, 1))`,
	`show(string.find(12345, 3))`,
	// captures and position captures
	`show(("key = value"):find("(%w+)%s*=%s*(%w+)"))`,
	`show(("hello"):find("()ll()"))`,
	`show(("hello"):find("(h)(e)(l)(l)(o)"))`,
	`show(("hello"):find("((h)(e))"))`,
	`show(("hello"):match("(h)()(e)"))`,
	`show(("abcabc"):find("(abc)%1"))`,
	`show(("xyzxyz"):match("(x(y)z)%1"))`,
	`show(("aa bb"):match("(%a)%1 (%a)%2"))`,
	`show(("hello"):match("()"))`,
	`show(("hello"):match("()", 3))`,
	// match: init
	`show(("hello world"):match("%a+", 7))`,
	`show(("hello world"):match("%a+", -5))`,
	`show(("hello world"):match("%a+", -50))`,
	`show(("hello world"):match("%a+", 100))`,
	`show(("hello world"):match("%d"))`,
	`show(("hello"):match(".-"))`,
	`show(("hello"):match(".-$"))`,
	// anchors
	`show(("hello"):find("^h"))`,
	`show(("hello"):find("^e"))`,
	`show(("hello"):find("^e", 2))`,
	`show(("hello"):find("o$"))`,
	`show(("hello"):find("l$"))`,
	`show(("a$b"):find("$b"))`,
	`show(("a$b"):find("a$b"))`,
	`show(("^a"):find("a^"))`,
	`show((""):match("^$"))`,
	`show(("x"):match("^$"))`,
	`show(("  padded  "):match("^%s*(.-)%s*$"))`,
	// %b, %f (gopher-lua has no frontier: %f is an "f")
	`show(("f(a(b)c) d"):match("%b()"))`,
	`show(("f(a(b)c d"):match("%b()"))`,
	`show(("[x] [y]"):find("%b[]", 2))`,
	`show(("if x then y end"):match("%bie"))`,
	`show(("'a' 'b'"):match("%b''"))`,
	`show(("x((y)"):match("%b()"))`,
	`show(("THE (quick) fox"):find("%f[%a]%a+"))`,
	`show(("of fa"):match("%f[a]"))`,
	// character classes and sets
	`show(("ABC abc 123 _!?"):match("(%u+) (%l+) (%d+) (%p+)"))`,
	`show(("a1 b2"):match("%w%d%s%w%d"))`,
	`show(("\t x"):match("%s+"))`,
	`show(("x\0y"):find("%z"))`,
	`show(("x\1y"):find("%c"))`,
	`show(("0x1F"):match("0x(%x+)"))`,
	`show(("ABC"):match("%A*"))`,
	`show(("hello, world"):match("[^,]+"))`,
	`show(("a-b_c"):match("[%w_-]+"))`,
	`show(("a-b"):match("[a-]+"))`,
	`show(("]]x"):match("[]]+"))`,
	`show(("x]"):match("[^]]+"))`,
	`show(("a-c-e"):match("[a-c-e]+"))`,
	`show(("Zz9"):match("[%a-z]+"))`,
	`show(("a^b"):match("[%^b]+"))`,
	`show(("a.b"):match("[.]"))`,
	`show(("2024-01-02"):match("^([0-9]+)-([0-9]+)-([0-9]+)$"))`,
	`show(("a.b"):match("%."))`,
	`show(("100%"):match("%d+%%"))`,
	`show(("aaa"):match("a-b"))`,
	`show(("aaab"):match("a-b"))`,
	`show(("aaab"):match("a?a?b"))`,
	`show(("ab"):match("a+?"))`,
	`show(("xyz"):match("x*y*z*w*"))`,
	// gmatch, including empty matches
	`gm("a=1, b=2, c=3", "(%w+)=(%w+)")`,
	`gm("one two  three", "%a+")`,
	`gm("abc", "")`,
	`gm("abc", "x*")`,
	`gm("abc", "%a*")`,
	`gm("abc", "()")`,
	`gm("abc", "()(.)")`,
	`gm("hello", "^h")`,
	`gm("hello", "^e")`,
	`gm("", "x*")`,
	`gm("f(a) g(b)", "%b()")`,
	`gm("aaa", "a-")`,
	`gm("one;two;;three", "([^;]*)")`,
	// gsub: string, table and function replacements, n, empty matches
	`show(("hello world"):gsub("o", "0"))`,
	`show(("hello world"):gsub("(o)", "[%1]"))`,
	`show(("hello world"):gsub("%w+", "<%0>"))`,
	`show(("hello world"):gsub("(%w+) (%w+)", "%2 %1"))`,
	`show(("abc"):gsub("", "-"))`,
	`show(("abc"):gsub("x*", "-"))`,
	`show(("abc"):gsub("%a*", "-"))`,
	`show(("abc"):gsub("^", ">"))`,
	`show(("abc"):gsub("$", "<"))`,
	`show(("aaaa"):gsub("a", "b", 2))`,
	`show(("aaaa"):gsub("a", "b", 0))`,
	`show(("baaa"):gsub("a", "b", 0))`,
	`show(("aaaa"):gsub("a", "b", -1))`,
	`show(("aaaa"):gsub("a", "b", 10))`,
	`show(("abc"):gsub("()", "%1"))`,
	`show(("$x $y $z"):gsub("%$(%w+)", {x = "1", y = false}))`,
	`show(("a b"):gsub("()%w", {[1] = "one", [3] = 3}))`,
	`show(("a b c"):gsub("%w", function(c) if c ~= "b" then return c:upper() end end))`,
	`show(("k=v, x=y"):gsub("(%w+)=(%w+)", function(k, v) return v .. "=" .. k end))`,
	`show(("abc"):gsub("()(%w)", function(p, c) return p .. c end))`,
	`show(("f(a(b)c) g(d)"):gsub("%b()", "[]"))`,
	`show(string.gsub("hello", "l", "L", 1.5))`,
	// errors
	`try(string.find, "abc", "(b")`,
	`try(string.find, "abc", "b)")`,
	`try(string.match, "abc", "[a")`,
	`try(string.match, "abc", "%b")`,
	`try(string.find, "abc", "%")`,
	`try(string.match, "abc", "(a)%2")`,
	`try(string.match, "abc", "%1")`,
	`try(string.gsub, "abc", "(b", "x")`,
	`try(string.gsub, "abc", "b", "%2")`,
	`try(string.gsub, "abc", "b", true)`,
	`try(string.gsub, "abc", "b", "x", "n")`,
	`try(string.find, nil, "b")`,
	`try(string.match, "abc", {})`,
	`try(string.find, "abc", "b", "x")`,
	`try(function() for _ in string.gmatch("abc", "(b") do end end)`,
}

// parityPrelude defines show, gm and try for patternParity.
const parityPrelude = `local function show(...)
	local out = {tostring(select("#", ...))}
	for i = 1, select("#", ...) do
		local v = select(i, ...)
		out[#out + 1] = type(v) .. ":" .. tostring(v)
	end
	return table.concat(out, " ")
end
local function gm(s, p)
	local out = {}
	for a, b, c in string.gmatch(s, p) do out[#out + 1] = show(a, b, c) end
	return #out .. " matches: " .. table.concat(out, " | ")
end
local function try(f, ...)
	return show(pcall(f, ...))
end
`

// TestPatternParity: the sandbox's pattern functions give exactly what
// gopher-lua's give, errors included, on captures, anchors, %b, classes,
// sets, empty matches, init and plain arguments.
func TestPatternParity(t *testing.T) {
	r := newTestRuntime(t, nil)
	plain := lua.NewState()
	defer plain.Close()
	for _, expr := range patternParity {
		t.Run(expr, func(t *testing.T) {
			src := parityPrelude + "return " + expr
			fn, err := plain.Load(strings.NewReader(src), "test")
			require.NoError(t, err)
			plain.Push(fn)
			require.NoError(t, plain.PCall(0, 1, nil), "gopher-lua")
			want := plain.Get(-1).String()
			plain.Pop(1)
			require.Equal(t, want, r.one(t, src))
		})
	}
}

// TestPatternDifferences pins the sandbox's deliberate departures from
// gopher-lua (patterns.go): what the sandbox gives, and (in part) what
// gopher-lua gives.
func TestPatternDifferences(t *testing.T) {
	r := newTestRuntime(t, nil)
	plain := lua.NewState()
	defer plain.Close()
	for _, tt := range []struct {
		name, src       string
		want, gopherLua string
	}{
		{"gmatch returns only its iterator", `return select("#", ("abc"):gmatch("."))`, "1", "2"},
		{"a gmatch iterator can be called by hand", `local it = ("abc"):gmatch(".") local ok, v = pcall(it) return tostring(v)`,
			"a", "bad argument #1"},
		{"an exhausted gmatch iterator stays exhausted", `local it = ("a"):gmatch(".") for _ in it do end return select("#", it())`, "0", ""},
		{"gsub returns a string", `return type((string.gsub(123, "9", "x")))`, "string", "number"},
		{"plain find past the end", `local ok, v = pcall(string.find, "abc", "b", 10, true) return tostring(v)`,
			"nil", "runtime error: slice bounds out of range [9:3]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, r.one(t, tt.src))
			if tt.gopherLua == "" {
				return
			}
			fn, err := plain.Load(strings.NewReader(tt.src), "test")
			require.NoError(t, err)
			plain.Push(fn)
			require.NoError(t, plain.PCall(0, 1, nil))
			require.Contains(t, plain.Get(-1).String(), tt.gopherLua)
			plain.Pop(1)
		})
	}
}
