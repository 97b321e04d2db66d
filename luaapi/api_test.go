package luaapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/internal/tokens"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// stuckDial returns a DialFunc whose attempts block until release is
// called, ignoring the attempt's context: a server declared with it stays
// connecting, and its disposal cannot finish before release (callers
// register release as a cleanup that runs before the manager's Close).
// Each attempt's server name is reported on the returned channel.
func stuckDial() (dial manager.DialFunc, dialed <-chan string, release func()) {
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	ch := make(chan string, 1024)
	dial = func(ctx context.Context, server string, _ manager.Spec) (mcp.Transport, error) {
		select {
		case ch <- server:
		default:
		}
		<-gate
		return nil, errors.New("released")
	}
	return dial, ch, release
}

// failingDial refuses every attempt with the same error.
func failingDial(context.Context, string, manager.Spec) (mcp.Transport, error) {
	return nil, errors.New("connection refused by test")
}

// newStuckRuntime is a runtime whose servers never finish connecting until
// release; the runtime's cleanup releases them first so the manager can
// close.
func newStuckRuntime(t *testing.T) (*testRuntime, <-chan string, func()) {
	dial, dialed, release := stuckDial()
	r := newTestRuntime(t, dial)
	t.Cleanup(release) // runs before the runtime's cleanup (LIFO)
	return r, dialed, release
}

func TestMcpAddReturnsWhileConnecting(t *testing.T) {
	r, dialed, _ := newStuckRuntime(t)
	require.Equal(t, []string{"git", "connecting"}, r.run(t, `
		local name = mcp_add("git", {command = {"git-mcp"}})
		return name, mcp_status("git").state`))
	require.Equal(t, "git", <-dialed, "the supervisor is dialling in the background")
	// Still connecting afterwards: nothing waited for the attempt.
	require.Equal(t, "connecting", r.one(t, `return mcp_status("git").state`))
	// Names are trimmed; mcp.add is the same function.
	require.Equal(t, []string{"fs", "true"}, r.run(t, `return mcp.add("  fs ", {url = "http://127.0.0.1:1/mcp"}), mcp.add == mcp_add`))
}

func TestMcpAddInvalidSpec(t *testing.T) {
	r, _, _ := newStuckRuntime(t)
	tests := []struct {
		name, src string
		want      []string // substrings of the error message
	}{
		{"unknown field", `mcp_add("bad", {comand = {"x"}})`,
			[]string{`test:1: INVALID_CONFIG: server "bad"`, "comand", `"command"`}},
		{"missing transport", `mcp_add("bad", {})`,
			[]string{`INVALID_CONFIG: server "bad"`, "command"}},
		{"bad url", `mcp_add("web", {url = "ftp://example.com"})`,
			[]string{`INVALID_CONFIG: server "web"`, "url"}},
		{"bad nested field", `mcp_add("slow", {command = {"x"}, timeouts = {connect = "5"}})`,
			[]string{`INVALID_CONFIG: server "slow"`, "timeouts.connect"}},
		{"wrong type", `mcp_add("git", {command = "git-mcp"})`,
			[]string{`INVALID_CONFIG: server "git"`, "command"}},
		{"list instead of fields", `mcp_add("git", {"git-mcp"})`,
			[]string{`mcp_add("git")`, "named fields"}},
		{"dot in name", `mcp_add("a.b", {command = {"x"}})`,
			[]string{"INVALID_CONFIG", `"a.b"`, "'.'"}},
		{"spec not a table", `mcp_add("git", "git-mcp")`,
			[]string{"bad argument #2", "table expected"}},
		{"function in spec", `mcp_add("git", {command = {"x"}, env = {A = print}})`,
			[]string{`mcp_add("git")`, "spec"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			le := r.fail(t, tt.src)
			for _, want := range tt.want {
				require.Contains(t, le.Message, want)
			}
		})
	}
	// None of them was declared.
	require.Equal(t, "{}", r.one(t, `return mcp_servers()`))
	// A Lua error, so pcall catches it with the message.
	require.Equal(t, []string{"false", "true"}, r.run(t, `
		local ok, err = pcall(mcp_add, "bad", {})
		return ok, err:find('server "bad"', 1, true) ~= nil`))
}

func TestMcpAddNameConflict(t *testing.T) {
	r, _, _ := newStuckRuntime(t)
	r.run(t, `mcp_add("git", {command = {"git-mcp"}})`)
	// The identical declaration again is a no-op.
	require.Equal(t, "git", r.one(t, `return mcp_add("git", {command = {"git-mcp"}})`))
	le := r.fail(t, `mcp_add("git", {command = {"other"}})`)
	require.Contains(t, le.Message, `NAME_CONFLICT: server "git"`)
	// Names compare case-insensitively: the same spec is the same server,
	// another spec a conflict.
	require.Equal(t, `{ "git" }`, r.run(t, `mcp_add("GIT", {command = {"git-mcp"}}) return mcp_servers()`)[0])
	le = r.fail(t, `mcp_add("GIT", {command = {"other"}})`)
	require.Contains(t, le.Message, `NAME_CONFLICT: server "GIT"`)
	require.Contains(t, le.Message, `"git"`, "the message names the existing server")
	require.Contains(t, le.Message, `use another name or mcp_remove("git") first`, "what to do, in Lua")
	require.Equal(t, `{ "git" }`, r.one(t, `return mcp_servers()`))
}

func TestMcpRemove(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	r.addDemo(t, "other")

	// Unknown name: nil, err — not a raised error.
	require.Equal(t, []string{"nil", "SERVER_NOT_FOUND", "nope", "remove", "true"}, r.run(t, `
		local ok, err = mcp_remove("nope")
		return ok, err.code, err.server, err.operation, tostring(err):find("^SERVER_NOT_FOUND: ") ~= nil`))
	require.Contains(t, r.one(t, `local _, err = mcp_remove("demo1") return err.message`), `"demo"`)

	// {wait = true} returns after disposal: the removed event is already
	// out and the name is gone.
	require.Equal(t, []string{"true", "nil", "SERVER_NOT_FOUND", "removed"}, r.run(t, `
		local ok = mcp_remove("demo", {wait = true})
		local st, err = mcp_status("demo")
		local last
		for _, e in ipairs(mcp_events(100)) do
			if e.server == "demo" then last = e.kind end
		end
		return ok, st, err.code, last`))
	require.Equal(t, `{ "other" }`, r.one(t, `return mcp_servers()`))

	// mcp.remove is the same function, plain form returns just true.
	require.Equal(t, []string{"true"}, r.run(t, `return mcp.remove("other")`))
	require.Equal(t, "{}", r.one(t, `return mcp_servers()`))

	le := r.fail(t, `mcp_remove(42)`)
	require.Contains(t, le.Message, "bad argument #1 to mcp_remove (string expected, got number)")
	require.True(t, strings.HasPrefix(le.Message, "test:1: "), le.Message)
}

// TestMcpRemoveReturnsBeforeDisposal: without wait, mcp_remove returns
// while the server's disposal is still blocked; with wait it does not
// return until disposal completes, and the loop serves others meanwhile.
func TestMcpRemoveReturnsBeforeDisposal(t *testing.T) {
	r, dialed, release := newStuckRuntime(t)
	r.run(t, `mcp_add("a", {command = {"x"}}) mcp_add("b", {command = {"x"}})`)
	got := map[string]bool{<-dialed: true, <-dialed: true}
	require.Equal(t, map[string]bool{"a": true, "b": true}, got, "both supervisors are stuck in dial")

	// Plain remove: returns true at once although "a" cannot be disposed
	// while its dial is stuck.
	require.Equal(t, []string{"true", "0"}, r.run(t, `
		local ok = mcp_remove("a")
		local removed = 0
		for _, e in ipairs(mcp_events()) do
			if e.kind == "removed" then removed = removed + 1 end
		end
		return ok, removed`))

	// Waiting remove: suspended until disposal, without blocking the loop.
	done := make(chan []string, 1)
	go func() {
		res, err := r.Exec(context.Background(), `return mcp_remove("b", {wait = true})`, "test")
		if err != nil {
			done <- []string{err.Error()}
			return
		}
		done <- res.Values
	}()
	entered(t, r.spy.removes, "b")
	// Another chunk runs to completion meanwhile; at that point the
	// waiting remove cannot have returned, as its disposal is blocked.
	require.Equal(t, "{}", r.one(t, `return mcp_servers()`))
	select {
	case v := <-done:
		t.Fatalf("mcp_remove with wait returned %q before disposal", v)
	default:
	}
	release()
	require.Equal(t, []string{"true"}, <-done)
	require.Equal(t, "b:removed", r.one(t, `
		for _, e in ipairs(mcp_events()) do
			if e.kind == "removed" and e.server == "b" then return "b:removed" end
		end`))
}

func TestMcpStatus(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	require.Equal(t, []string{"demo", "connected", "stdio", "0", "nil", "4", "mcpvisor-demo", "0.1.0", "true", "nil", "demo"}, r.run(t, `
		local st = mcp_status("demo")
		return st.name, st.state, st.transport, st.attempts, st.last_error, st.tools,
			st.server.name, st.server.version, #st.protocol > 0, st.pid, st.endpoint`))
	// Protocol is a date-like version the SDK negotiated.
	require.Regexp(t, `^\d{4}-\d{2}-\d{2}$`, r.one(t, `return mcp_status("demo").protocol`))
	require.Regexp(t, `^\d{4}-\d{2}-\d{2}T`, r.one(t, `return mcp_status("demo").connected_at`))

	// Case-insensitive lookup, unknown names give nil, err.
	require.Equal(t, "demo", r.one(t, `return mcp_status("DEMO").name`))
	vals := r.run(t, `local st, err = mcp_status("demoo") return st, err.code, tostring(err)`)
	require.Equal(t, []string{"nil", "SERVER_NOT_FOUND"}, vals[:2])
	require.True(t, strings.HasPrefix(vals[2], `SERVER_NOT_FOUND: server "demoo"`), vals[2])
	require.Contains(t, vals[2], `"demo"`, "the message suggests the known server")

	// Without a name: every server by name.
	r.addDemo(t, "other")
	require.Equal(t, []string{"demo=connected", "other=connected", "2"}, r.run(t, `
		local all, n = mcp_status(), 0
		for _ in pairs(all) do n = n + 1 end
		return "demo=" .. all.demo.state, "other=" .. all.other.state, n`))
	require.Equal(t, "true", r.one(t, `return mcp.status == mcp_status`))
}

func TestMcpStatusLastError(t *testing.T) {
	r := newTestRuntime(t, failingDial)
	require.Equal(t, []string{"backoff", "true", "true"}, r.run(t, `
		mcp_add("down", {command = {"x"}, backoff = {initial = 60, max = 60}})
		assert(mcp_wait("down", "backoff"))
		local st = mcp_status("down")
		return st.state, st.attempts >= 1, st.last_error:find("connection refused by test", 1, true) ~= nil`))
	require.Equal(t, "true", r.one(t, `local n = mcp_status("down").next_attempt_in return n > 0 and n <= 75`))
	// What to do is said apart from what happened, as a Lua call.
	require.Regexp(t, `^the next attempt is in [0-9hms.]+, or mcp_reconnect\("down"\) to try now$`, r.one(t, `return mcp_status("down").remedy`))
	require.NotContains(t, r.one(t, `return mcp_status("down").last_error`), "mcp_")
}

// A server that cannot start as declared says so, and the remedy is the
// Lua call that tries again once the declaration is fixed.
func TestMcpStatusRemedyOfAServerThatCannotStart(t *testing.T) {
	r := newTestRuntimeWith(t, manager.Options{}) // real processes
	require.Equal(t, []string{"failed", `fix its declaration, then mcp_reconnect("gone")`}, r.run(t, `
		mcp_add("gone", {command = {"/nonexistent/mcpvisor-test/no-such-program"}})
		assert(mcp_wait("gone", "failed"))
		local st = mcp_status("gone")
		return st.state, st.remedy`))
	msg := r.one(t, `local _, err = mcp_call("gone.echo", {}) return err.message`)
	require.True(t, strings.HasSuffix(msg, `; fix its declaration, then mcp_reconnect("gone")`), msg)
}

func TestMcpServers(t *testing.T) {
	r, _, _ := newStuckRuntime(t)
	require.Equal(t, []string{"{}", "[]"}, r.run(t, `return mcp_servers(), json.encode(mcp_servers())`))
	r.run(t, `for _, n in ipairs({"zeta", "Alpha", "mid"}) do mcp_add(n, {command = {"x"}}) end`)
	require.Equal(t, `{ "Alpha", "mid", "zeta" }`, r.one(t, `return mcp_servers()`))
	require.Equal(t, `["Alpha","mid","zeta"]`, r.one(t, `return json.encode(mcp_servers())`))
}

func TestMcpTools(t *testing.T) {
	r := newTestRuntime(t, nil)
	require.Equal(t, []string{"0", "[]"}, r.run(t, `return #mcp_tools(), json.encode(mcp_tools())`))
	r.addDemo(t, "demo")
	require.Equal(t, "demo.add demo.echo demo.fail demo.sleep", r.one(t, `
		local names = {}
		for _, tool in ipairs(mcp_tools()) do names[#names + 1] = tool.name end
		return table.concat(names, " ")`))
	require.Equal(t, []string{"demo.echo", "demo", "echo", "Return the given text unchanged, as a single text content.",
		"object", "string", "true"}, r.run(t, `
		local echo = mcp_tools("demo")[2]
		return echo.name, echo.server, echo.tool, echo.description,
			echo.input_schema.type, echo.input_schema.properties.text.type, echo.available`))

	// Each tool says what its definition costs a model, as listed.
	tools, err := r.m.Tools("demo")
	require.NoError(t, err)
	want := fmt.Sprint(tokens.Tool(tools[1].Tool))
	require.Greater(t, tokens.Tool(tools[1].Tool), 20, "echo's definition, with its description and schema")
	require.Equal(t, want, r.one(t, `return mcp_discover("demo")[2].tokens`), "discover counts before it answers")
	other := newTestRuntime(t, nil)
	other.addDemo(t, "demo")
	require.Equal(t, "nil", other.one(t, `return mcp_tools("demo")[2].tokens`), "mcp_tools never counts on the loop")
	require.Eventually(t, func() bool { return other.one(t, `return mcp_tools("demo")[2].tokens`) == want },
		10*time.Second, 10*time.Millisecond, "counted in the background for the next call")

	r.addDemo(t, "other")
	require.Equal(t, []string{"8", "4", "other.add"}, r.run(t, `
		return #mcp_tools(), #mcp_tools("other"), mcp_tools("other")[1].name`))
	require.Equal(t, []string{"nil", "SERVER_NOT_FOUND"}, r.run(t, `
		local tools, err = mcp_tools("nope")
		return tools, err.code`))
}

func TestMcpCall(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	tests := []struct {
		name, src string
		want      []string
	}{
		{"echo text", `return mcp_call("demo.echo", {text = "hi"}).text`, []string{"hi"}},
		{"add structured", `return mcp_call("demo.add", {a = 2, b = 3}).structured.sum`, []string{"5"}},
		{"add result", `local r = mcp_call("demo.add", {a = 2, b = 3})
			return r.text, r.is_error, #r.content, r.content[1].type, r.content[1].text`,
			[]string{"5", "false", "1", "text", "5"}},
		{"fail keeps text", `local r, err = mcp_call("demo.fail", {message = "disk full"})
			return r.is_error, r.text, err`, []string{"true", "disk full", "nil"}},
		{"bare tool name", `return mcp_call("echo", {text = "bare"}).text`, []string{"bare"}},
		{"module alias", `return mcp.call("demo.echo", {text = "m"}).text, mcp.call == mcp_call`, []string{"m", "true"}},
		// Missing arguments are {}: checked against the tool's schema, which
		// names the missing property.
		{"no arguments", `local r, err = mcp_call("demo.echo") return r, err.code, err.message:find("text", 1, true) ~= nil`,
			[]string{"nil", "INVALID_ARGUMENTS", "true"}},
		{"nil arguments", `local r, err = mcp_call("demo.echo", nil) return r, err.code`, []string{"nil", "INVALID_ARGUMENTS"}},
		{"wrong argument type", `local r, err = mcp_call("demo.add", {a = "two", b = 3}) return r, err.code, err.server`,
			[]string{"nil", "INVALID_ARGUMENTS", "demo"}},
		{"no structured", `return mcp_call("demo.echo", {text = "x"}).structured`, []string{"nil"}},
		{"long string", `return #mcp_call("demo.echo", {text = string.rep("x", 100000)}).text`, []string{"100000"}},
		{"utf-8", `return mcp_call("demo.echo", {text = "héllo ✓"}).text`, []string{"héllo ✓"}},
		{"structured encodes", `return json.encode(mcp_call("demo.add", {a = 40, b = 2}).structured)`, []string{`{"sum":42}`}},
		{"sleep", `return mcp_call("demo.sleep", {ms = 1}).text`, []string{"slept 1ms"}},
		{"generous timeout", `return mcp_call("demo.echo", {text = "t"}, {timeout = 5}).text`, []string{"t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, r.run(t, tt.src))
		})
	}
}

func TestMcpCallErrors(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")

	// Unknown tool of a known server.
	require.Equal(t, []string{"nil", "TOOL_NOT_FOUND", "demo", `tools/call "nope"`, "true", "true", "2"}, r.run(t, `
		local res, err = mcp_call("demo.nope", {})
		return res, err.code, err.server, err.operation,
			tostring(err):sub(1, 16) == "TOOL_NOT_FOUND: ",
			tostring(err) == err.code .. ": " .. err.message,
			select("#", mcp_call("demo.nope", {}))`))
	// A typo gets a suggestion (the wording is the manager's).
	ecko := r.one(t, `local _, err = mcp_call("demo.ecko", {}) return tostring(err)`)
	require.Contains(t, ecko, "did you mean")
	require.Contains(t, ecko, "echo")

	// Unknown server: no server in the error, but the code is the same.
	require.Equal(t, []string{"TOOL_NOT_FOUND", "nil", "call"}, r.run(t, `
		local _, err = mcp_call("nope.echo", {})
		return err.code, err.server, err.operation`))

	// Call timeout: INVOCATION_FAILED saying which limit ran out.
	require.Equal(t, []string{"nil", "INVOCATION_FAILED", "demo", "true"}, r.run(t, `
		local res, err = mcp_call("demo.sleep", {ms = 5000}, {timeout = 0.05})
		return res, err.code, err.server, err.message:find("timeout after 50ms", 1, true) ~= nil`))
	timeout := r.one(t, `local _, err = mcp_call("demo.sleep", {ms = 5000}, {timeout = 0.05}) return tostring(err)`)
	require.True(t, strings.HasPrefix(timeout, `INVOCATION_FAILED: server "demo": `), timeout)
	require.Contains(t, timeout, "timeout after 50ms")

	// Invalid use raises, pointing at the caller's line.
	raises := []struct {
		name, src, want string
	}{
		{"name not a string", `mcp_call(1, {})`, "test:1: bad argument #1 to mcp_call (string expected, got number)"},
		{"args not a table", `mcp_call("demo.echo", "hi")`, "test:1: bad argument #2 to mcp_call (arguments must be a table like {text = \"hi\"}, got string)"},
		{"args a list", `mcp_call("demo.echo", {"hi"})`, "test:1: bad argument #2 to mcp_call (arguments must be a table of named fields, not a list)"},
		{"args with a function", `mcp_call("demo.echo", {text = print})`, "test:1: bad argument #2 to mcp_call ("},
		{"opts not a table", `mcp_call("demo.echo", {}, 5)`, "test:1: bad argument #3 to mcp_call (options must be a table like {timeout = 5})"},
		{"timeout not a number", `mcp_call("demo.echo", {}, {timeout = "5s"})`, "test:1: bad argument #3 to mcp_call (timeout must be a number of seconds, got string)"},
		{"negative timeout", `mcp_call("demo.echo", {}, {timeout = -1})`, "test:1: bad argument #3 to mcp_call (seconds must be within 0..1000000, got -1)"},
		{"nan timeout", `mcp_call("demo.echo", {}, {timeout = 0/0})`, "test:1: bad argument #3 to mcp_call (seconds must be within"},
	}
	for _, tt := range raises {
		t.Run(tt.name, func(t *testing.T) {
			le := r.fail(t, "\n"+tt.src)
			want := strings.Replace(tt.want, "test:1:", "test:2:", 1)
			require.True(t, strings.HasPrefix(le.Message, want), "got %q\nwant prefix %q", le.Message, want)
		})
	}
}

// TestMcpCallArity: the suspending builtins return a fixed number of
// values, whatever the call site asks for.
func TestMcpCallArity(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	require.Equal(t, []string{"x", "nil", "nil"}, r.run(t, `
		local a, b, c = mcp_call("demo.echo", {text = "x"})
		return a.text, b, c`))
	require.Equal(t, []string{"1", "x"}, r.run(t, `
		local t = {mcp_call("demo.echo", {text = "x"})}
		return #t, t[1].text`))
	require.Equal(t, []string{"1", "2"}, r.run(t, `
		return select("#", mcp_call("demo.echo", {text = "x"})), select("#", mcp_call("demo.nope", {}))`))
	require.Equal(t, []string{"y", "z"}, r.run(t, `
		local function pass(...) return ... end
		return pass(mcp_call("demo.echo", {text = "y"})).text, (mcp_call("demo.echo", {text = "z"})).text`))
	// As the last argument of a call, and as an operand.
	require.Equal(t, []string{"ab"}, r.run(t, `return mcp_call("demo.echo", {text = "a"}).text .. mcp_call("demo.echo", {text = "b"}).text`))
	require.Equal(t, []string{"0"}, r.run(t, `return select("#", sleep(0))`))

	// print sees one value on success and two (nil, err) on failure.
	r.run(t, `print(mcp_call("demo.echo", {text = "x"}))`)
	line := strings.TrimSuffix(r.out.String(), "\n")
	require.True(t, strings.HasPrefix(line, "table: "), line)
	require.NotContains(t, line, "\t")
	r.run(t, `print(mcp_call("demo.nope", {}))`)
	lines := strings.Split(strings.TrimSuffix(r.out.String(), "\n"), "\n")
	require.Len(t, lines, 2)
	require.True(t, strings.HasPrefix(lines[1], "nil\tTOOL_NOT_FOUND: "), lines[1])
}

// TestMcpCallConcurrentExecs: many chunks calling at once each get their
// own result.
func TestMcpCallConcurrentExecs(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	const n = 32
	var wg sync.WaitGroup
	got := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Exec(context.Background(), fmt.Sprintf(`
				local a = mcp_call("demo.echo", {text = "c%d"}).text
				sleep(0)
				local b = mcp_call("demo.add", {a = %d, b = 1}).structured.sum
				return a .. "/" .. b`, i, i), fmt.Sprintf("chunk%d", i))
			errs[i] = err
			if err == nil && len(res.Values) == 1 {
				got[i] = res.Values[0]
			}
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, fmt.Sprintf("c%d/%d", i, i+1), got[i])
	}
}

func TestMcpWait(t *testing.T) {
	r, _, _ := newStuckRuntime(t)
	r.run(t, `mcp_add("slow", {command = {"x"}})`)
	require.Equal(t, []string{"true"}, r.run(t, `return mcp_wait("slow", "connecting")`))
	require.Equal(t, []string{"true"}, r.run(t, `return mcp.wait("slow", "CONNECTING", 1)`))

	// Timeout: false and a message with the current state.
	vals := r.run(t, `return mcp_wait("slow", "connected", 0.05)`)
	require.Len(t, vals, 2)
	require.Equal(t, "false", vals[0])
	require.Contains(t, vals[1], `server "slow"`)
	require.Contains(t, vals[1], "still connecting", "the message has the current state")
	require.Equal(t, []string{"false", "true"}, r.run(t, `
		local ok, why = mcp_wait("nope", "connected")
		return ok, why:find("no such server", 1, true) ~= nil`))

	le := r.fail(t, `mcp_wait("slow", "ready")`)
	require.Contains(t, le.Message, `test:1: bad argument #2 to mcp_wait (unknown state "ready"`)
	le = r.fail(t, `mcp_wait("slow", "connected", "1s")`)
	require.Contains(t, le.Message, "bad argument #3 to mcp_wait (number expected, got string)")
}

func TestMcpWaitMessageHasLastError(t *testing.T) {
	r := newTestRuntime(t, failingDial)
	require.Equal(t, []string{"false", "true", "true"}, r.run(t, `
		mcp_add("down", {command = {"x"}, backoff = {initial = 60, max = 60}})
		assert(mcp_wait("down", "backoff"))
		local ok, why = mcp_wait("down", "connected", 0.05)
		return ok, why:find("still backoff, not connected", 1, true) ~= nil,
			why:find("last error: ", 1, true) ~= nil and why:find("connection refused by test", 1, true) ~= nil`))
}

// TestMcpWaitForRemoval: a wait ends with false when the server is removed
// meanwhile.
func TestMcpWaitForRemoval(t *testing.T) {
	r := newTestRuntime(t, failingDial)
	r.run(t, `mcp_add("down", {command = {"x"}, backoff = {initial = 60, max = 60}})`)
	done := make(chan []string, 1)
	go func() {
		res, err := r.Exec(context.Background(), `return mcp_wait("down", "connected", 30)`, "test")
		if err != nil {
			done <- []string{err.Error()}
			return
		}
		done <- res.Values
	}()
	entered(t, r.spy.waits, "down")
	r.run(t, `mcp_remove("down")`)
	got := <-done
	require.Len(t, got, 2)
	require.Equal(t, "false", got[0])
	// The removal may land before the manager's Wait has looked the
	// server up (the spy reports on entry); either way the wait ends at
	// once rather than after its 30s.
	require.Regexp(t, `server "down": wait: (server was removed while waiting for connected|no such server)`, got[1])
}

func TestMcpEvents(t *testing.T) {
	r := newTestRuntime(t, nil)
	// The connected event is published just after the state is stored, so
	// mcp_wait can return before it is out: wait for the event itself.
	sub := r.m.Bus().Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	r.addDemo(t, "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		e, err := sub.Recv(ctx)
		require.NoError(t, err)
		if e.Kind == events.KindConnected && e.Server == "demo" {
			break
		}
	}
	require.Equal(t, []string{"added connecting connected", "true", "4", "stdio"}, r.run(t, `
		local kinds, ordered, prev, connected, added = {}, true, 0
		for _, e in ipairs(mcp_events()) do
			if e.server == "demo" then kinds[#kinds + 1] = e.kind end
			if e.seq <= prev then ordered = false end
			prev = e.seq
			if e.kind == "connected" then connected = e end
			if e.kind == "added" then added = e end
		end
		return table.concat(kinds, " "), ordered, connected.tools, added.transport`))
	require.Regexp(t, `^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}`, r.one(t, `return mcp_events(1)[1].time`))

	// n counts from the end, oldest first; the default is 50.
	bus := r.m.Bus()
	var last events.Event
	for i := range 60 {
		last = bus.Publish(events.KindNotification, "demo", events.Fields{"i": i, "method": "test"})
	}
	require.Equal(t, []string{"50", "10", "59", "2", "58", "59", fmt.Sprint(last.Seq), "notification", "demo", "test"}, r.run(t, `
		local all, two = mcp_events(), mcp_events(2)
		return #all, all[1].i, all[50].i, #two, two[1].i, two[2].i, two[2].seq, two[2].kind, two[2].server, two[2].method`))
	require.Equal(t, "true", r.one(t, `return #mcp_events(1000) >= 63`))
}

func TestSleep(t *testing.T) {
	r := newTestRuntime(t, nil)
	start := time.Now()
	require.Equal(t, []string{"done"}, r.run(t, `sleep(0.02) sleep(0) return "done"`))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	require.Equal(t, "true", r.one(t, `return mcp.sleep == sleep`))
	for _, tt := range []struct{ src, want string }{
		{`sleep("1")`, "test:1: bad argument #1 to sleep (number expected, got string)"},
		{`sleep()`, "test:1: bad argument #1 to sleep (number expected, got nil)"},
		{`sleep(-1)`, "test:1: bad argument #1 to sleep (seconds must be within 0..1000000, got -1)"},
	} {
		require.Equal(t, tt.want, r.fail(t, tt.src).Message)
	}
}

func TestJSONGlobal(t *testing.T) {
	r := newTestRuntime(t, nil)
	require.Equal(t, []string{`{"a":[1,2,3],"b":{"c":"d"}}`, "3", "d"}, r.run(t, `
		local s = json.encode({a = {1, 2, 3}, b = {c = "d"}})
		local v = json.decode(s)
		return s, #v.a, v.b.c`))
}

// TestLoopNotBlockedByMcpCall: while chunk A waits 300ms in mcp_call,
// chunk B, Exec'd after A is suspended, runs and finishes first.
func TestLoopNotBlockedByMcpCall(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")

	var mu sync.Mutex
	var order []string
	finished := func(name string) {
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
	}
	aDone := make(chan []string, 1)
	go func() {
		res, err := r.Exec(context.Background(), `return mcp_call("demo.sleep", {ms = 300}).text`, "A")
		finished("A")
		if err != nil {
			aDone <- []string{err.Error()}
			return
		}
		aDone <- res.Values
	}()
	entered(t, r.spy.calls, "demo.sleep") // A is waiting in mcp_call
	// B does real work through the loop, including its own call.
	require.Equal(t, []string{"b", "connected"}, r.run(t, `
		return mcp_call("demo.echo", {text = "b"}).text, mcp_status("demo").state`))
	finished("B")
	require.Equal(t, []string{"slept 300ms"}, <-aDone)
	mu.Lock()
	require.Equal(t, []string{"B", "A"}, order)
	mu.Unlock()
}

// TestLoopNotBlockedWhileCallHeld: the same without any clock: A's call is
// held inside the manager until B has finished, so B can only finish if
// the loop is free while A waits.
func TestLoopNotBlockedWhileCallHeld(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	hold := make(chan struct{})
	r.spy.hold.Store(&hold)
	aDone := make(chan luaapi.Result, 1)
	go func() {
		res, _ := r.Exec(context.Background(), `return mcp_call("demo.echo", {text = "a"}).text`, "A")
		aDone <- res
	}()
	entered(t, r.spy.calls, "demo.echo")
	r.spy.hold.Store(nil)
	// B: a sleep and a call of its own, both suspending, complete.
	require.Equal(t, []string{"b"}, r.run(t, `sleep(0.001) return mcp_call("demo.echo", {text = "b"}).text`))
	close(hold)
	require.Equal(t, []string{"a"}, (<-aDone).Values)
}

// TestSuspendingBuiltinsInForbiddenPlaces: gopher-lua's coroutine pitfalls
// (a yield inside pcall, a metamethod, a generic-for iterator or a Go
// callback such as a table.sort comparator, where gopher-lua would lose the
// result silently or panic in Go) give a clear Lua error naming the builtin
// — never a Go panic or a silently lost result — and the runtime keeps
// working.
func TestSuspendingBuiltinsInForbiddenPlaces(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	const call = `mcp_call("demo.echo", {text = "lost"})`
	const inPcall = "mcp_call cannot run inside pcall, a metamethod, an iterator or a Go callback (table.sort, string.gsub); use mcp_call_cb(name, args, function(result, err) ... end) there"
	tests := []struct {
		name, src string
		want      string   // the Exec error's message
		wantVals  []string // or, for protected forms, the values returned
	}{
		{name: "pcall", src: `local ok, err = pcall(function() local r = ` + call + ` return r end) return ok, err`,
			wantVals: []string{"false", "test:1: " + inPcall}},
		{name: "xpcall", src: `local ok, err = xpcall(function() local r = ` + call + ` return r end, function(e) return "handled: " .. e end) return ok, err`,
			wantVals: []string{"false", "handled: test:1: " + inPcall}},
		{name: "coroutine.wrap", src: `return coroutine.wrap(function() local r = ` + call + ` return r end)()`,
			want: "test:1: mcp_call cannot run inside a coroutine created by coroutine.create/wrap; call it from the chunk or hook itself"},
		{name: "coroutine.resume", src: `return coroutine.resume(coroutine.create(function() local r = ` + call + ` return r end))`,
			wantVals: []string{"false", "test:1: mcp_call cannot run inside a coroutine created by coroutine.create/wrap; call it from the chunk or hook itself"}},
		{name: "table.sort comparator", src: "local t = {3, 1, 2}\ntable.sort(t, function(a, b) " + call + " return a < b end) return t[1]",
			want: "test:2: " + inPcall},
		{name: "string.gsub callback", src: `return (string.gsub("abc", "%w", function(c) return ` + call + `.text end))`,
			want: "test:1: " + inPcall},
		{name: "__index metamethod", src: `return setmetatable({}, {__index = function() return ` + call + ` end}).x.text`,
			want: inPcall},
		{name: "__index metamethod, not a tail call", src: `return setmetatable({}, {__index = function() local r = ` + call + ` return r end}).x.text`,
			want: "test:1: " + inPcall},
		{name: "__add metamethod", src: `local v = setmetatable({}, {__add = function() local r = ` + call + ` return r.text end}) + 1 return v`,
			want: "test:1: " + inPcall},
		{name: "__tostring", src: `return tostring(setmetatable({}, {__tostring = function() local r = ` + call + ` return r.text end}))`,
			want: "test:1: " + inPcall},
		{name: "generic-for iterator", src: "local function iter(_, prev)\n if prev then return nil end\n local r = " + call + "\n return r.text\nend\nfor v in iter do end return 'went on'",
			want: "test:3: " + inPcall},
		{name: "require'd module body", src: `return require("calls_at_load")`,
			want: "$SCRIPTS/calls_at_load.lua:1: " + inPcall},
		{name: "sleep in table.sort", src: `table.sort({2, 1}, function(a, b) sleep(0) return a < b end)`,
			want: "test:1: sleep cannot run inside pcall, a metamethod, an iterator or a Go callback (table.sort, string.gsub)"},
		{name: "mcp_wait in string.gsub", src: `string.gsub("a", "a", function() mcp_wait("demo", "connected") end)`,
			want: "test:1: mcp_wait cannot run inside pcall, a metamethod, an iterator or a Go callback (table.sort, string.gsub)"},
		{name: "mcp_remove wait in pcall", src: `local ok, err = pcall(mcp_remove, "demo", {wait = true}) return ok, err`,
			wantVals: []string{"false", "test:1: mcp_remove cannot run inside pcall, a metamethod, an iterator or a Go callback (table.sort, string.gsub)"}},
		{name: "coroutine.yield in the chunk", src: `coroutine.yield(1) return "went on"`,
			want: "coroutine.yield was called outside a coroutine created with coroutine.create/wrap"},
	}
	require.NoError(t, os.WriteFile(filepath.Join(r.scriptDir, "calls_at_load.lua"),
		[]byte(`local r = mcp_call("demo.echo", {text = "lost"}) return r`), 0o600))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := r.Exec(ctx, tt.src, "test")
			if tt.wantVals != nil {
				require.NoError(t, err)
				require.Equal(t, tt.wantVals, res.Values)
			} else {
				var le *luaapi.Error
				require.ErrorAs(t, err, &le, "returned %q", res.Values)
				require.Equal(t, strings.ReplaceAll(tt.want, "$SCRIPTS", r.scriptDir), le.Message)
				require.Nil(t, le.Cause)
			}
			// The runtime keeps working, suspending calls included, and the
			// server the guarded mcp_remove named is still there.
			require.Equal(t, []string{"ok", "connected"}, r.run(t, `return mcp_call("demo.echo", {text = "ok"}).text, mcp_status("demo").state`))
		})
	}
}

// TestSuspendingBuiltinsInAllowedPlaces: ordinary Lua structure around a
// call is fine: loops over pairs/ipairs, nested functions, callbacks the
// chunk calls itself, a coroutine-free closure stored in a table.
func TestSuspendingBuiltinsInAllowedPlaces(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	require.Equal(t, []string{"a,b,c|x|y|3"}, r.run(t, `
		local out = {}
		for _, s in ipairs({"a", "b", "c"}) do out[#out + 1] = mcp_call("demo.echo", {text = s}).text end
		local m = {}
		for k in pairs({x = true}) do m[#m + 1] = mcp_call("demo.echo", {text = k}).text end
		local function apply(f, v) return f(v) end
		local y = apply(function(v) return mcp_call("demo.echo", {text = v}).text end, "y")
		local obj = {n = 0}
		function obj:bump() sleep(0) self.n = self.n + 1 return self end
		obj:bump():bump():bump()
		local i = 0
		repeat i = i + 1 until mcp_call("demo.add", {a = i, b = 0}).structured.sum == 3
		return table.concat(out, ",") .. "|" .. m[1] .. "|" .. y .. "|" .. obj.n`))
}

// TestPcallMcpCall: under pcall the guard's error is what pcall returns, so
// the script sees why instead of losing the result.
func TestPcallMcpCall(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	vals := r.run(t, `return pcall(mcp_call, "demo.echo", {text = "x"})`)
	require.Len(t, vals, 2)
	require.Equal(t, "false", vals[0])
	require.Contains(t, vals[1], "mcp_call cannot run inside pcall")
	vals = r.run(t, `local ok, err = pcall(function() local r = mcp_call("demo.echo", {text = "x"}) return r end) return ok, err`)
	require.Equal(t, "false", vals[0])
	require.Contains(t, vals[1], "mcp_call cannot run inside pcall")
	require.True(t, strings.HasPrefix(vals[1], "test:1: "), vals[1])
	// Outside pcall, a script checks failures with the nil, err return.
	require.Equal(t, []string{"false", "TOOL_NOT_FOUND"}, r.run(t, `
		local res, err = mcp_call("demo.nope", {})
		return res ~= nil, err.code`))
}

// TestScriptCoroutinesStillWork: coroutines the script makes for itself
// work as in plain Lua, as long as they do not suspend in our builtins.
func TestScriptCoroutinesStillWork(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	require.Equal(t, []string{"1", "2", "3"}, r.run(t, `
		local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
		return gen(), gen(), gen()`))
	require.Equal(t, []string{"false", "true"}, r.run(t, `
		local co = coroutine.create(function() return mcp_call("demo.echo", {text = "x"}) end)
		local ok, err = coroutine.resume(co)
		return ok, err:find("mcp_call cannot run inside a coroutine", 1, true) ~= nil`))
	// After a suspension in mcp_call, the chunk's own coroutines still run.
	require.Equal(t, []string{"x!"}, r.run(t, `
		local text = mcp_call("demo.echo", {text = "x"}).text
		return coroutine.wrap(function() return text .. "!" end)()`))
}

// TestErrorAfterResume: an error after a suspension still says where and
// keeps its traceback.
func TestErrorAfterResume(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	le := r.fail(t, `local function check(r)
	error("after " .. r.text)
end
check(mcp_call("demo.echo", {text = "x"}))`)
	require.Equal(t, "test:2: after x", le.Message)
	require.Contains(t, le.Traceback, "'check'")
	require.Contains(t, le.Traceback, "test:4: in main chunk")
}

// TestStdioServerStatus runs the demo server as a real process (this test
// binary, see TestMain) through the manager's own spawning: the status has
// its pid, and mcp_remove{wait = true} returns once the process is gone.
func TestStdioServerStatus(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	r := newTestRuntimeWith(t, manager.Options{StopGrace: time.Second}, func(o *luaapi.Options) {
		o.LookupEnv = func(string) (string, bool) { return exe, true }
	})
	vals := r.run(t, `
		mcp_add("proc", {command = {"${EXE}"}, env = {`+demoServerEnv+` = "1"}})
		assert(mcp_wait("proc", "connected"))
		local st = mcp_status("proc")
		return st.transport, st.pid, st.server.name, st.endpoint, mcp_call("proc.echo", {text = "from a process"}).text`)
	require.Len(t, vals, 5)
	require.Equal(t, "stdio", vals[0])
	pid, err := strconv.Atoi(vals[1])
	require.NoError(t, err, "pid %q", vals[1])
	require.Positive(t, pid)
	// The endpoint shows the command as written: a value taken from the
	// environment (it could be a token) is never displayed.
	require.Equal(t, []string{"mcpvisor-demo", "${EXE}", "from a process"}, vals[2:])
	require.True(t, testutil.ProcessExists(pid), "the server process runs")

	require.Equal(t, "true", r.one(t, `return mcp_remove("proc", {wait = true})`))
	require.False(t, testutil.ProcessExists(pid), "the process is gone and reaped once mcp_remove returns")
}

// TestCancelWhileWaiting: cancelling Exec's ctx while the chunk waits in
// any suspending builtin ends the Exec promptly with Cause
// context.Canceled, and the runtime keeps working.
func TestCancelWhileWaiting(t *testing.T) {
	dial, _, release := stuckDial()
	demoDial := inMemoryDemoDial(t)
	r := newTestRuntime(t, func(ctx context.Context, server string, spec manager.Spec) (mcp.Transport, error) {
		if server == "stuck" {
			return dial(ctx, server, spec)
		}
		return demoDial(ctx, server, spec)
	})
	t.Cleanup(release) // before the runtime's cleanup: disposal of "stuck" needs it
	r.addDemo(t, "demo")
	r.run(t, `mcp_add("stuck", {command = {"x"}})`)

	tests := []struct {
		name, src string
		reached   func(t *testing.T) // returns once the chunk waits, if it can tell
	}{
		{"mcp_call", `mcp_call("demo.sleep", {ms = 60000})`, func(t *testing.T) { entered(t, r.spy.calls, "demo.sleep") }},
		{"mcp_wait", `mcp_wait("stuck", "connected", 600)`, func(t *testing.T) { entered(t, r.spy.waits, "stuck") }},
		{"sleep", `sleep(600)`, nil},
		{"mcp_remove wait", `mcp_remove("stuck", {wait = true})`, func(t *testing.T) { entered(t, r.spy.removes, "stuck") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := make(chan error, 1)
			go func() {
				_, err := r.Exec(ctx, tt.src+` return "not reached"`, "test")
				ch <- err
			}()
			if tt.reached != nil {
				tt.reached(t)
			}
			cancel()
			select {
			case err := <-ch:
				require.ErrorIs(t, err, context.Canceled)
				var le *luaapi.Error
				require.ErrorAs(t, err, &le)
				require.Equal(t, context.Canceled, le.Cause)
				require.Equal(t, "interrupted", le.Message)
			case <-time.After(5 * time.Second):
				t.Fatal("Exec did not return after its ctx was cancelled")
			}
			require.Equal(t, "ok", r.one(t, `return mcp_call("demo.echo", {text = "ok"}).text`))
		})
	}
}
