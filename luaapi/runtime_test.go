package luaapi_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// TestMain fails the package if a test leaves a goroutine behind: the loop,
// every task's background work, supervisors and in-memory demo sessions
// must all be gone once a test's cleanups have run.
//
// With LUAAPI_TEST_DEMO_SERVER=1 the test binary is instead the demo MCP
// server on stdin/stdout, for tests that need a real stdio process.
func TestMain(m *testing.M) {
	if os.Getenv(demoServerEnv) == "1" {
		if err := demo.Serve(context.Background(), os.Stdin, os.Stdout); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// demoServerEnv turns the test binary into the demo server (see TestMain).
const demoServerEnv = "LUAAPI_TEST_DEMO_SERVER"

// testBinary is what tests pass as Options.Binary; MCPVISOR must show it.
const testBinary = "/bin/mcpvisor-test"

// inMemoryDemoDial returns a DialFunc that serves every connection attempt
// with a fresh demo.NewServer() over mcp.NewInMemoryTransports. The server
// sessions are closed when the test ends (after the manager, whose cleanup
// is registered later and so runs first).
func inMemoryDemoDial(t testing.TB) manager.DialFunc {
	return inMemoryDial(t, demo.NewServer)
}

// inMemoryDial connects every server to a fresh in-memory server from
// newServer, closed when the test ends.
func inMemoryDial(t testing.TB, newServer func() *mcp.Server) manager.DialFunc {
	var mu sync.Mutex
	var sessions []*mcp.ServerSession
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ss := range sessions {
			_ = ss.Close()
			_ = ss.Wait()
		}
	})
	return func(ctx context.Context, server string, spec manager.Spec) (mcp.Transport, error) {
		clientT, serverT := mcp.NewInMemoryTransports()
		ss, err := newServer().Connect(context.Background(), serverT, nil)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		sessions = append(sessions, ss)
		mu.Unlock()
		return clientT, nil
	}
}

// spyManager is the real manager instrumented: the name given to Call,
// Wait and Remove is reported on calls, waits and removes as it enters the
// manager, and while hold is set a Call waits for it to be closed before
// going on. Tests use it to know that a chunk is suspended in a builtin
// without sleeping. Reports nobody reads are dropped.
type spyManager struct {
	*manager.Manager
	calls, waits, removes chan string
	hold                  atomic.Pointer[chan struct{}]
}

func report(ch chan string, name string) {
	select {
	case ch <- name:
	default:
	}
}

func (s *spyManager) Wait(ctx context.Context, name string, state manager.State) (manager.Status, error) {
	report(s.waits, name)
	return s.Manager.Wait(ctx, name, state)
}

func (s *spyManager) Remove(name string) (<-chan struct{}, error) {
	report(s.removes, name)
	return s.Manager.Remove(name)
}

func (s *spyManager) Call(ctx context.Context, name string, args any, opts manager.CallOptions) (*mcp.CallToolResult, error) {
	report(s.calls, name)
	if h := s.hold.Load(); h != nil {
		select {
		case <-*h:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Manager.Call(ctx, name, args, opts)
}

// testRuntime is a runtime over a manager whose servers are all the
// in-memory demo server.
type testRuntime struct {
	*luaapi.Runtime
	m         *manager.Manager
	spy       *spyManager
	out       *testutil.SyncBuffer
	scriptDir string
}

// newTestRuntime builds the runtime as the issue prescribes; opts may
// adjust the luaapi options (Manager and Stdout are always set here).
func newTestRuntime(t testing.TB, dial manager.DialFunc, opts ...func(*luaapi.Options)) *testRuntime {
	t.Helper()
	if dial == nil {
		dial = inMemoryDemoDial(t)
	}
	return newTestRuntimeWith(t, manager.Options{Dial: dial}, opts...)
}

// newTestRuntimeWith is newTestRuntime with the manager's options given.
func newTestRuntimeWith(t testing.TB, mopts manager.Options, opts ...func(*luaapi.Options)) *testRuntime {
	t.Helper()
	m := manager.New(mopts)
	spy := &spyManager{Manager: m, calls: make(chan string, 256), waits: make(chan string, 256), removes: make(chan string, 256)}
	out := &testutil.SyncBuffer{}
	o := luaapi.Options{Manager: spy, Stdout: out, Binary: testBinary, ScriptDir: t.TempDir()}
	for _, f := range opts {
		f(&o)
	}
	rt, err := luaapi.New(o)
	require.NoError(t, err)
	t.Cleanup(func() {
		rt.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("manager.Close: %v", err)
		}
	})
	return &testRuntime{Runtime: rt, m: m, spy: spy, out: out, scriptDir: o.ScriptDir}
}

// run Execs src with a generous deadline and requires success.
func (r *testRuntime) run(t testing.TB, src string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := r.Exec(ctx, src, "test")
	require.NoError(t, err, "chunk:\n%s", src)
	return res.Values
}

// one Execs src and requires exactly one returned value.
func (r *testRuntime) one(t testing.TB, src string) string {
	t.Helper()
	vals := r.run(t, src)
	require.Len(t, vals, 1, "chunk %q returned %q", src, vals)
	return vals[0]
}

// fail Execs src and requires an *luaapi.Error.
func (r *testRuntime) fail(t testing.TB, src string) *luaapi.Error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := r.Exec(ctx, src, "test")
	require.Error(t, err, "chunk %q returned %q", src, res.Values)
	var le *luaapi.Error
	require.ErrorAs(t, err, &le)
	return le
}

// entered waits until name is reported on ch (one of the spy's channels),
// skipping reports of earlier operations.
func entered(t testing.TB, ch <-chan string, name string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-ch:
			if got == name {
				return
			}
		case <-timeout:
			t.Fatalf("%q never reached the manager", name)
		}
	}
}

// addDemo declares server name (served by the in-memory demo) and waits
// until it is connected.
func (r *testRuntime) addDemo(t testing.TB, name string) {
	t.Helper()
	r.run(t, `mcp_add("`+name+`", {command = {"demo"}})
		local ok, why = mcp_wait("`+name+`", "connected")
		assert(ok, why)`)
}

func TestNewRequiresManager(t *testing.T) {
	rt, err := luaapi.New(luaapi.Options{})
	require.Error(t, err)
	require.Nil(t, rt)
	require.Contains(t, err.Error(), "Manager")
}

func TestExecReturnsRenderedValues(t *testing.T) {
	r := newTestRuntime(t, nil)
	require.Equal(t, []string{"hi", "42", "true", "nil"}, r.run(t, `return "hi", 42, true, nil`))
	require.Empty(t, r.run(t, `local x = 1`))
	require.Equal(t, "/bin/mcpvisor-test", r.one(t, `return MCPVISOR`))
}

// A string result is shown as it is, lines and tabs included, except for
// what a terminal would act on or hide: a server's reply to a tool call,
// typed at the REPL, cannot retitle the window or clear the screen.
func TestExecEscapesTerminalControlInStrings(t *testing.T) {
	r := newTestRuntime(t, nil)
	require.Equal(t, []string{`A\x1b]0;PWNED\x07\x1b[2JB`, `admin\u202egnp.exe`, "two\nlines\tand 🔥"},
		r.run(t, `return "A\27]0;PWNED\7\27[2JB", "admin\226\128\174gnp.exe", "two\nlines\tand 🔥"`))
}

// print writes what the user chose to print as it is: escape sequences
// there are the user's own.
func TestPrintGoesToStdout(t *testing.T) {
	r := newTestRuntime(t, nil)
	require.Empty(t, r.run(t, `print("a", 1, nil, true) print(setmetatable({}, {__tostring = function() return "T" end})) print("\27[1mbold")`))
	require.Equal(t, "a\t1\tnil\ttrue\nT\n\x1b[1mbold\n", r.out.String())
}

func TestExecAfterCloseFails(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.Close()
	r.Close() // idempotent
	_, err := r.Exec(context.Background(), `return 1`, "test")
	require.Error(t, err)
	require.Contains(t, err.Error(), "closed")
}

func TestExecFile(t *testing.T) {
	r := newTestRuntime(t, nil)
	path := filepath.Join(t.TempDir(), "startup.lua")
	require.NoError(t, os.WriteFile(path, []byte("local x = 2\nreturn x * 21\n"), 0o600))
	res, err := r.ExecFile(context.Background(), path)
	require.NoError(t, err)
	require.Equal(t, []string{"42"}, res.Values)

	require.NoError(t, os.WriteFile(path, []byte("local x = 2\nerror('boom')\n"), 0o600))
	_, err = r.ExecFile(context.Background(), path)
	var le *luaapi.Error
	require.ErrorAs(t, err, &le)
	require.Equal(t, "startup.lua:2: boom", le.Message)

	_, err = r.ExecFile(context.Background(), filepath.Join(t.TempDir(), "missing.lua"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestRuntimeErrorHasChunkLine: a runtime error says where, as chunk:line.
func TestRuntimeErrorHasChunkLine(t *testing.T) {
	r := newTestRuntime(t, nil)
	le := r.fail(t, "local x = nil\nreturn x.y")
	require.False(t, le.Syntax)
	require.Nil(t, le.Cause)
	require.True(t, strings.HasPrefix(le.Message, "test:2: "), le.Message)
	require.Contains(t, le.Message, "nil")
	require.Equal(t, le.Message, le.Error())
}

// TestErrorTraceback: the traceback is captured inside the task and names
// every Lua function between the chunk and the error.
func TestErrorTraceback(t *testing.T) {
	r := newTestRuntime(t, nil)
	le := r.fail(t, `
local function inner() error("deep") end
local function outer() inner() end
function global_entry() outer() end
global_entry()`)
	require.Equal(t, "test:2: deep", le.Message)
	require.True(t, strings.HasPrefix(le.Traceback, "stack traceback:"), le.Traceback)
	for _, want := range []string{"'inner'", "'outer'", "'global_entry'", "test:2:", "test:3:", "test:4:", "in main chunk"} {
		require.Contains(t, le.Traceback, want)
	}
	require.NotContains(t, le.Traceback, "(task)", "the bootstrap frame is hidden")
	// Inner frames come before outer ones.
	require.Less(t, strings.Index(le.Traceback, "'inner'"), strings.Index(le.Traceback, "'outer'"))

	// Errors raised from a Go builtin keep a traceback too.
	le = r.fail(t, "local function f() local v = mcp_call(42) return v end\nf()")
	require.Contains(t, le.Message, "bad argument #1 to mcp_call")
	require.Contains(t, le.Traceback, "'f'")
}

// TestErrorValues: whatever the chunk raises is rendered readably.
func TestErrorValues(t *testing.T) {
	r := newTestRuntime(t, nil)
	tests := []struct {
		name, src, want string
	}{
		{"string with position", `error("boom")`, "test:1: boom"},
		{"string at level 0", `error("bare", 0)`, "bare"},
		{"table", `error({code = 42})`, "error object: {\n  code = 42,\n}"},
		{"number", `error(7, 0)`, "7"},
		{"nil", `error(nil)`, "nil"},
		{"our error table", `local _, err = mcp_call("nope.x", {}) error(err)`, "TOOL_NOT_FOUND: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			le := r.fail(t, tt.src)
			require.True(t, strings.HasPrefix(le.Message, tt.want), "got %q, want prefix %q", le.Message, tt.want)
			require.NotContains(t, le.Message, "table: 0x")
		})
	}
}

func TestSyntaxError(t *testing.T) {
	r := newTestRuntime(t, nil)
	le := r.fail(t, "local x = 1\nx = = 2")
	require.True(t, le.Syntax)
	require.Empty(t, le.Traceback)
	require.NotNil(t, le.Cause)
	// chunk:line:column, as editors expect.
	require.Equal(t, "test:2:5: near '=': syntax error", le.Message)

	le = r.fail(t, "for i = 1, 3 do\n  print(i)")
	require.True(t, le.Syntax)
	require.True(t, strings.HasPrefix(le.Message, "test:"), le.Message)
	require.Contains(t, le.Message, "end of input")

	// The runtime is still usable.
	require.Equal(t, "ok", r.one(t, `return "ok"`))
}

// TestCancelStopsBusyLoop: a chunk that never yields stops when its ctx is
// cancelled (gopher-lua checks the context between instructions).
func TestCancelStopsBusyLoop(t *testing.T) {
	r := newTestRuntime(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the chunk has started spinning: the print is the
		// signal.
		assert.Eventually(t, func() bool { return strings.Contains(r.out.String(), "spinning") }, 10*time.Second, time.Millisecond)
		cancel()
	}()
	_, err := r.Exec(ctx, `print("spinning") while true do end`, "test")
	require.ErrorIs(t, err, context.Canceled)

	// Already-cancelled ctx: the chunk does not run to completion either.
	_, err = r.Exec(ctx, `while true do end`, "test")
	require.ErrorIs(t, err, context.Canceled)

	// A busy loop inside a coroutine the script made stops as well.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err = r.Exec(ctx2, `local co = coroutine.wrap(function() while true do end end) co()`, "test")
	require.ErrorIs(t, err, context.DeadlineExceeded)

	require.Equal(t, "2", r.one(t, `return 1 + 1`))
}

// TestCloseInterruptsWaitingChunk: Close ends tasks suspended in a builtin
// and their Exec returns.
func TestCloseInterruptsWaitingChunk(t *testing.T) {
	r := newTestRuntime(t, nil)
	ch := make(chan error, 1)
	go func() {
		_, err := r.Exec(context.Background(), `sleep(60) return "not reached"`, "test")
		ch <- err
	}()
	// Another Exec completing proves the first is suspended in sleep.
	require.Equal(t, "1", r.one(t, `return 1`))
	r.Close()
	select {
	case err := <-ch:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Exec did not return after Close")
	}
}

// TestCloseWhileChunksKeepWaiting: Close races chunks that keep starting
// background work (sleep, mcp_call); every Exec returns an error and no
// goroutine is left behind (goleak) or races the shutdown (-race).
func TestCloseWhileChunksKeepWaiting(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			src := `while true do sleep(0) end`
			if i%2 == 1 {
				src = `while true do mcp_call("demo.echo", {text = "x"}) end`
			}
			_, err := r.Exec(context.Background(), src, "busy")
			errs <- err
		}()
	}
	entered(t, r.spy.calls, "demo.echo") // the chunks are running
	r.Close()
	for range n {
		select {
		case err := <-errs:
			require.Error(t, err)
			var le *luaapi.Error
			if errors.As(err, &le) {
				require.ErrorIs(t, err, context.Canceled)
				require.Equal(t, "interrupted: the host is shutting down", le.Message)
			} else {
				require.Contains(t, err.Error(), "closed")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("an Exec did not return after Close")
		}
	}
}

func TestSandbox(t *testing.T) {
	r := newTestRuntime(t, nil)
	for _, expr := range []string{"io", "debug"} {
		t.Run(expr, func(t *testing.T) {
			require.Equal(t, "nil", r.one(t, "return "+expr))
		})
	}
	// Left-out functions say so when called, rather than "attempt to call
	// a nil value".
	for _, fn := range []string{"os.exit", "os.execute", "os.remove", "os.rename", "os.tmpname", "dofile", "loadfile", "load", "loadstring", "module"} {
		t.Run(fn, func(t *testing.T) {
			_, err := r.Exec(context.Background(), fn+"()", "test")
			require.ErrorContains(t, err, fn+" is not available in mcpvisor's Lua sandbox")
		})
	}
	// What stays: the safe part of os and the usual libraries.
	require.Equal(t, "number", r.one(t, `return type(os.time())`))
	require.Equal(t, "number", r.one(t, `return type(os.clock())`))
	require.Equal(t, []string{"table", "table", "table", "table", "table", "table"},
		r.run(t, `return type(string), type(table), type(math), type(coroutine), type(json), type(package)`))
}

// TestRequireFromScriptDir: require finds modules in Options.ScriptDir, and
// only there.
func TestRequireFromScriptDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "helpers.lua"), []byte(`
local M = {}
function M.twice(x) return 2 * x end
M.loads = (M.loads or 0) + 1
return M
`), 0o600))
	r := newTestRuntime(t, nil, func(o *luaapi.Options) { o.ScriptDir = dir })
	require.Equal(t, "42", r.one(t, `return require("helpers").twice(21)`))
	require.Equal(t, "true", r.one(t, `return require("helpers") == require("helpers")`))

	le := r.fail(t, `require("not_there")`)
	require.Contains(t, le.Message, "not_there")
	require.Contains(t, le.Message, filepath.Join(dir, "not_there.lua"))
	require.Equal(t, "", r.one(t, `return package.cpath`))
}

func TestIncomplete(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{"for i = 1, 3 do", true},
		{"for i = 1, 3 do\n  print(i)", true},
		{"for i = 1, 3 do\n  print(i)\nend", false},
		{"function f()", true},
		{"if x then", true},
		{"local t = {", true},
		{"1 +", true},
		{`mcp_call("demo.echo",`, true},
		{"x = [[long\nstring", true},
		{"x = = 1", false},
		{"x = 1", false},
		{"1 + 1", false},
		{"mcp_status()", false},
		{"end", false},
		{"", false},
		{"return", false},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			require.Equal(t, tt.want, luaapi.Incomplete(tt.src))
		})
	}
}

func TestExprOrChunk(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		{"mcp_status()", "return mcp_status()"},
		{"1 + 1", "return 1 + 1"},
		{`"hi"`, `return "hi"`},
		{"x", "return x"},
		{"f(1), g(2)", "return f(1), g(2)"},
		{"x = 1", "x = 1"},
		{"local y = 2", "local y = 2"},
		{"print(1) print(2)", "print(1) print(2)"},
		{"for i = 1, 2 do end", "for i = 1, 2 do end"},
		{"return 5", "return 5"},
		{"x = = 1", "x = = 1"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			require.Equal(t, tt.want, luaapi.ExprOrChunk(tt.src))
		})
	}
}
