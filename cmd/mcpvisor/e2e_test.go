//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoHi is the README's first example: wait for the demo server, call its
// echo tool and return the text.
const echoHi = `assert(mcp_wait("demo", "connected")); return mcp_call("demo.echo", {text = "hi"}).text`

// repoStartup is the repository's documented startup.lua, relative to this
// package's directory.
const repoStartup = "../../startup.lua"

// pkgDir is this package's directory, the working directory of go test.
func pkgDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	return wd
}

// testdata returns the absolute path of a file under testdata/.
func testdata(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(pkgDir(t), "testdata", name)
}

// logLine matches one line of the default (text) log format.
var logLine = regexp.MustCompile(`^time=\S+ level=(DEBUG|INFO|WARN|ERROR) msg=`)

// requireOnlyLogs asserts that every line of stderr is a log line.
func requireOnlyLogs(t *testing.T, stderr string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
		require.Regexp(t, logLine, l, "stderr line is not a log line")
	}
}

// Declaring a server and calling its tool from Lua: the README's first
// example prints exactly the tool's text on stdout; everything else (the
// log) goes to stderr.
func TestEvalEcho(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		args []string
	}{
		{"built-in default config", "", []string{"--log-level", "info", "-e", echoHi}},
		{"repository startup.lua", pkgDir(t), []string{"--log-level", "info", "-c", repoStartup, "-e", echoHi}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runBinary(t, invocation{dir: tt.dir, args: tt.args})
			require.Equal(t, 0, o.code, "exit code")
			require.Equal(t, "hi\n", o.stdout, "stdout")
			for _, want := range []string{
				`msg="server added" seq=1 server=demo kind=added`,
				`msg="server connected"`,
				`msg="server removed"`,
			} {
				require.Contains(t, o.stderr, want)
			}
			requireOnlyLogs(t, o.stderr)
		})
	}
}

// A ./startup.lua in the working directory replaces the built-in default.
func TestWorkingDirectoryStartup(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "startup.lua"),
		[]byte(`mcp_add("mine", {command = {MCPVISOR, "demo-server"}})`+"\n"), 0o644))
	o := runBinary(t, invocation{dir: dir, args: []string{"-e", `return table.concat(mcp_servers(), ",")`}})
	require.Equal(t, 0, o.code)
	require.Equal(t, "mine\n", o.stdout)
}

// The connection limit through the command line: with --max-connections 1 a
// second server waits for a slot, says so in mcp_status, and a call to it
// gets CONNECTION_LIMIT at its timeout; removing the holder lets it
// connect.
func TestMaxConnectionsFlag(t *testing.T) {
	code := `
mcp_add("second", {command = {MCPVISOR, "demo-server"}})
assert(mcp_wait("demo", "connected"))
sleep(0.2)
local st = mcp_status("second")
local _, err = mcp_call("second.echo", {text = "x"}, {timeout = 0.3})
mcp_remove("demo", {wait = true})
assert(mcp_wait("second", "connected"))
return st.state .. " | " .. st.waiting .. " | " .. err.code .. " | " .. err.message`
	o := runBinary(t, invocation{args: []string{"--max-connections", "1", "-e", code}})
	require.Equal(t, 0, o.code, "exit code; stderr: %s", o.stderr)
	require.Equal(t, `connecting | max connections (1) reached | CONNECTION_LIMIT | server "second": connect: max connections (1) reached; no slot came free within 300ms; try again later`+"\n", o.stdout)

	o = runBinary(t, invocation{args: []string{"--max-connections", "-1", "-e", "return 1"}})
	require.Equal(t, 2, o.code)
	require.Contains(t, o.stderr, "--max-connections must be 0 (no cap) or more, got -1")
}

// Failures of -e code and of the config: exit 1, the Lua message with its
// chunk and line on stderr, nothing on stdout.
func TestEvalErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		// wantStderr must each appear in stderr.
		wantStderr []string
		// noTraceback: the message's file:line says it all.
		noTraceback bool
	}{
		{
			name:        "error() in -e",
			args:        []string{"-e", `error("x")`},
			wantStderr:  []string{"error: (-e):1: x\n"},
			noTraceback: true,
		},
		{
			name:       "error() in a function keeps the stack",
			args:       []string{"-e", "local function f() error(\"x\") end\nf()"},
			wantStderr: []string{"error: (-e):1: x\nstack traceback:\n\t[G]: in function 'error'\n\t(-e):1: in function 'f'\n\t(-e):2: in main chunk\n"},
		},
		{
			name:        "a mistyped function",
			args:        []string{"-e", `mcp_ad("x", {command = {"true"}})`},
			wantStderr:  []string{"error: (-e):1: attempt to call 'mcp_ad', which is nil; did you mean mcp_add?\n"},
			noTraceback: true,
		},
		{
			name:        "a config error",
			args:        []string{"-c", testdata(t, "bad_url.lua"), "-e", `print("must not run")`},
			wantStderr:  []string{`error: bad_url.lua:2: INVALID_CONFIG: server "web": config: url: must be an http:// or https:// URL, got "127.0.0.1:9/mcp"; add the scheme: "http://127.0.0.1:9/mcp"` + "\n"},
			noTraceback: true,
		},
		{
			name:       "syntax error in -e",
			args:       []string{"-e", `return (`},
			wantStderr: []string{"error: (-e)"},
		},
		{
			name:       "error(err) of a failed call",
			args:       []string{"-e", `local res, err = mcp_call("demo.nope", {}); error(err)`},
			wantStderr: []string{"error: TOOL_NOT_FOUND: ", `no tool "nope"`},
		},
		{
			name:       "assert on a failed call",
			args:       []string{"-e", `return assert(mcp_call("demo.nope", {}))`},
			wantStderr: []string{"error: TOOL_NOT_FOUND: ", `no tool "nope"`},
		},
		{
			name:       "runtime error in the config",
			args:       []string{"-c", testdata(t, "runtime_error.lua"), "-e", `print("must not run")`},
			wantStderr: []string{"error: runtime_error.lua:3: boom in config"},
		},
		{
			name:       "missing config",
			args:       []string{"-c", "no-such-config.lua", "-e", `print("must not run")`},
			wantStderr: []string{"mcpvisor: read config: open no-such-config.lua: no such file or directory"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runBinary(t, invocation{args: tt.args})
			require.Equal(t, 1, o.code, "exit code")
			require.Empty(t, o.stdout, "stdout")
			for _, want := range tt.wantStderr {
				require.Contains(t, o.stderr, want)
			}
			if tt.noTraceback {
				require.NotContains(t, o.stderr, "stack traceback")
			}
		})
	}
}

// A config with a syntax error fails before any of it runs: exit 1, file,
// line and column on stderr, and no server was ever added or spawned.
func TestConfigSyntaxError(t *testing.T) {
	o := runBinary(t, invocation{args: []string{"-c", testdata(t, "syntax_error.lua"), "-e", `print("must not run")`}})
	require.Equal(t, 1, o.code, "exit code")
	require.Empty(t, o.stdout, "stdout")
	// gopher-lua says "syntax_error.lua line:4(column:11) near '='"; the
	// conventional "syntax_error.lua:4:11:" would do as well.
	require.Regexp(t, `syntax_error\.lua(:4:11\b| line:4\(column:11\))`, o.stderr)
	require.Contains(t, o.stderr, "error: ")
	require.NotContains(t, o.stderr, "server added")
	require.NotContains(t, o.stderr, "connect attempt")
}

// Stdin that is not a terminal is one script, as lua runs it: locals live
// to its end, values are neither echoed nor is what it returns printed, an
// error stops it with file:line and exit 1 (what ran before it stays
// printed), and it starts once the demo server is up.
func TestStdinScript(t *testing.T) {
	tests := []struct {
		name       string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr []string
	}{
		{
			name: "one chunk: a bare expression is a syntax error and nothing runs",
			stdin: `print("first")
local n = 0
for i = 1, 3 do
  n = n + i
  print("loop " .. i)
end
1 + 1
`,
			wantCode:   1,
			wantStdout: "",
			wantStderr: []string{"error: stdin"}, // a bare expression is not a statement in a script
		},
		{
			name: "locals and functions across lines",
			stdin: `local x = 5
print(x)
local function greet(name)
  return "hello " .. name
end
print(greet("e2e"))
print(#mcp_tools())
print(mcp_call("demo.sleep", {ms = 100}).text)
error("boom")
print("after the error")
`,
			wantCode:   1,
			wantStdout: "5\nhello e2e\n4\nslept 100ms\n",
			wantStderr: []string{"error: stdin:9: boom\n"}, // the line in the whole input
		},
		{
			name:       "what it returns is not printed",
			stdin:      "answer = 41\nreturn answer + 1\n",
			wantCode:   0,
			wantStdout: "",
		},
		{
			name:       "a shebang line is skipped and lines still count",
			stdin:      "#!/usr/bin/env mcpvisor\nprint(arg[0])\nerror(\"x\")\n",
			wantCode:   1,
			wantStdout: "-\n",
			wantStderr: []string{"error: stdin:3: x\n"},
		},
		{
			name:       "incomplete chunk at EOF",
			stdin:      "print(\"ok\")\nfor i = 1, 2 do\n  print(i)\n",
			wantCode:   1,
			wantStdout: "", // nothing runs: the script does not compile
			wantStderr: []string{"error: ", "unexpected end of input"},
		},
		{
			name:     "empty input",
			stdin:    "",
			wantCode: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runBinary(t, invocation{stdin: tt.stdin})
			require.Equal(t, tt.wantCode, o.code, "exit code")
			for _, want := range tt.wantStderr {
				require.Contains(t, o.stderr, want)
			}
			require.Equal(t, tt.wantStdout, o.stdout, "stdout")
		})
	}
}

// -e code that returns nothing prints nothing (not "nil").
func TestEvalStatementPrintsNothing(t *testing.T) {
	for _, code := range []string{`x = 1`, `print("a")`, `return`} {
		t.Run(code, func(t *testing.T) {
			o := runBinary(t, invocation{args: []string{"-e", code}})
			require.Equal(t, 0, o.code)
			want := ""
			if code == `print("a")` {
				want = "a\n"
			}
			require.Equal(t, want, o.stdout)
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			o := runBinary(t, invocation{args: args})
			require.Equal(t, 0, o.code, "exit code")
			require.Empty(t, o.stderr, "stderr")
			for _, want := range []string{"-c FILE", "-e CODE", "run FILE.lua [args]", "--wait DURATION", "--log-level", "--log-format", "demo-server", "Usage:", "$XDG_STATE_HOME/mcpvisor/mcpvisor.log"} {
				require.Contains(t, o.stdout, want)
			}
		})
	}
}

// --help names every mcp_ function the Lua API has.
func TestHelpListsLuaAPI(t *testing.T) {
	o := runBinary(t, invocation{args: []string{"-e", `local t = {}
for k in pairs(_G) do if k:match("^mcp_") then t[#t + 1] = k end end
table.sort(t)
return table.concat(t, " ")`}})
	require.Equal(t, 0, o.code, o.stderr)
	names := strings.Fields(o.stdout)
	require.Contains(t, names, "mcp_reconnect", "the listing works")
	help := runBinary(t, invocation{args: []string{"--help"}}).stdout
	for _, name := range names {
		assert.Regexp(t, `\b`+name+`\b`, help, "--help does not mention %s", name)
	}
}

// Usage errors exit 2 with a message that says what is wrong and where to
// look, before anything starts.
func TestBadUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "mcpvisor: flag provided but not defined: -no-such-flag\n"},
		{[]string{"--log-level", "loud"}, `mcpvisor: --log-level must be debug, info, warn or error, got "loud"` + "\n"},
		{[]string{"--log-format", "xml"}, `mcpvisor: --log-format must be text or json, got "xml"` + "\n"},
		{[]string{"-e"}, "mcpvisor: flag needs an argument: -e\n"},
		{[]string{"startup.lua"}, `mcpvisor: unexpected argument "startup.lua"; to run a config, use -c startup.lua` + "\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := runBinary(t, invocation{args: tt.args})
			require.Equal(t, 2, o.code, "exit code")
			require.Empty(t, o.stdout, "stdout")
			require.Equal(t, tt.want+"Run 'mcpvisor --help' for usage.\n", o.stderr)
		})
	}
}

// --log-format json: every stderr line is a JSON object; event lines carry
// server and kind, and the demo server's lifecycle is in order.
func TestLogFormatJSON(t *testing.T) {
	o := runBinary(t, invocation{args: []string{"--log-format", "json", "--log-level", "info", "-e", echoHi}})
	require.Equal(t, 0, o.code)
	require.Equal(t, "hi\n", o.stdout)
	var kinds []string
	for _, l := range strings.Split(strings.TrimRight(o.stderr, "\n"), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), "stderr line %q", l)
		for _, key := range []string{"time", "level", "msg", "kind", "seq"} {
			require.Contains(t, rec, key, "stderr line %q", l)
		}
		if rec["kind"] == "config_applied" { // host-wide: no server
			require.Equal(t, []any{"demo"}, rec["added"], "stderr line %q", l)
			continue
		}
		require.Contains(t, rec, "server", "stderr line %q", l)
		if rec["server"] == "demo" {
			kinds = append(kinds, rec["kind"].(string))
		}
	}
	require.Equal(t, []string{"added", "connecting", "connected", "closing", "removed"}, kinds)
}

// -e is a one-shot command: unless --log-level says otherwise it logs only
// warnings and errors, so a run where nothing goes wrong prints its result
// alone.
func TestEvalQuietByDefault(t *testing.T) {
	o := runBinary(t, invocation{args: []string{"-e", echoHi}})
	require.Equal(t, 0, o.code)
	require.Equal(t, "hi\n", o.stdout)
	require.Empty(t, o.stderr)
}

// Servers are discovered independently: a server whose program does not
// exist and one that never answers do not delay the demo server; the
// failing one says why, once: it is failed, not retried.
func TestBadServersDoNotDelayOthers(t *testing.T) {
	code := `
assert(mcp_wait("demo", "connected", 5))
assert(mcp_wait("bad", "failed", 5))
return json.encode({demo = mcp_status("demo"), bad = mcp_status("bad"), mute = mcp_status("mute")})`
	// --wait 0: the code starts at once rather than once the servers
	// settle (the mute one never would), so its own waits are measured.
	o := runBinary(t, invocation{args: []string{"--log-level", "info", "--wait", "0", "-c", testdata(t, "bad_servers.lua"), "-e", code}})
	require.Equal(t, 0, o.code)
	var st map[string]struct {
		State     string `json:"state"`
		LastError string `json:"last_error"`
		Remedy    string `json:"remedy"`
		Attempts  int    `json:"attempts"`
	}
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &st))
	assert.Equal(t, "connected", st["demo"].State)
	assert.Equal(t, "connecting", st["mute"].State)
	assert.Equal(t, "failed", st["bad"].State)
	assert.Equal(t, 1, st["bad"].Attempts)
	assert.Equal(t, `server "bad": spawn: program "/nonexistent/mcpvisor-e2e/no-such-server" does not exist; correct the path, or install it there (not retried)`,
		st["bad"].LastError)
	assert.Equal(t, `fix its declaration, then mcp_reconnect("bad")`, st["bad"].Remedy, "Lua is told what to call")
	assert.Contains(t, o.stderr, "remedy=\"`mcpvisor check -c "+testdata(t, "bad_servers.lua")+"` says what keeps it from starting\"",
		"the log, read in a shell, says what to run")
	assert.Equal(t, 1, strings.Count(o.stderr, `msg="server failed, giving up"`))
	assert.NotContains(t, o.stderr, `msg="backing off, will retry"`)
	// The run ended (within runBinary's bound) although the mute server's
	// attempt would run an hour: shutdown stops it.
}

// SIGTERM shuts the host down gracefully, well within the shutdown grace,
// and the demo server's process is reaped on the way out.
func TestSIGTERM(t *testing.T) {
	t.Run("while -e code runs", func(t *testing.T) {
		p := start(t, invocation{args: []string{"--log-level", "info", "-e",
			`assert(mcp_wait("demo", "connected")); print(mcp_status("demo").pid); sleep(600)`}})
		terminate(t, p)
	})
	t.Run("while a piped script runs", func(t *testing.T) {
		p := start(t, invocation{args: []string{"--log-level", "info"}})
		_, err := p.stdin.Write([]byte(`assert(mcp_wait("demo", "connected")); print(mcp_status("demo").pid); sleep(600)` + "\n"))
		require.NoError(t, err)
		require.NoError(t, p.stdin.Close()) // the script is whole: it runs
		terminate(t, p)
	})
	t.Run("while waiting for the end of stdin", func(t *testing.T) {
		p := start(t, invocation{args: []string{"--log-level", "info"}})
		_, err := p.stdin.Write([]byte(`print("never runs")` + "\n"))
		require.NoError(t, err)
		p.stderr.waitFor(t, "the demo server up", 10*time.Second, func(s string) bool {
			return strings.Contains(s, `msg="server connected"`)
		})
		// stdin stays open: the script is not whole yet, and waits.
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		if !p.wait(shutdownGrace) {
			t.Fatalf("mcpvisor still runs after SIGTERM while reading stdin")
		}
		assert.Equal(t, 1, p.cmd.ProcessState.ExitCode())
		assert.NotContains(t, p.stdout.String(), "never runs")
		assert.Contains(t, p.stderr.String(), `msg="server removed"`)
	})
}

// terminate reads the demo server's pid from p's first stdout line, sends
// SIGTERM and checks that p exits on its own, having disposed of the demo
// server (a shutdown that ran out of its grace would not have).
func terminate(t *testing.T, p *process) {
	t.Helper()
	pid, err := strconv.Atoi(p.line(10 * time.Second))
	require.NoError(t, err, "first stdout line must be the demo server's pid")
	state, cmdline, ok := procState(pid)
	require.True(t, ok, "demo server %d is not running", pid)
	require.Contains(t, cmdline, "demo-server", "pid %d (state %c)", pid, state)

	sent := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	if !p.wait(shutdownGrace + 2*time.Second) {
		t.Fatalf("mcpvisor still runs %v after SIGTERM (shutdown grace %v)", time.Since(sent), shutdownGrace)
	}
	t.Logf("exited %v after SIGTERM with %v", time.Since(sent).Round(time.Millisecond), p.cmd.ProcessState)
	ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	assert.False(t, ws.Signaled(), "mcpvisor was killed by the signal instead of shutting down: %v", p.cmd.ProcessState)
	assert.Contains(t, p.stderr.String(), "mcpvisor: shutting down")
	assert.Contains(t, p.stderr.String(), `msg="server removed"`)
	requireGone(t, pid, "demo server")
}

// A second signal forces exit at once, even while a server that ignores
// SIGTERM holds up the graceful shutdown.
func TestSecondSignalForcesExit(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "stubborn.pid")
	p := start(t, invocation{
		args: []string{"-c", testdata(t, "stubborn.lua"), "-e", "sleep(600)"},
		env:  []string{"STUBBORN_PIDFILE=" + pidfile},
	})
	pid := waitPidfile(t, pidfile)
	t.Cleanup(func() {
		// A forced exit leaves the stubborn server behind by design. As
		// subreaper we inherited it: kill its group and reap it.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	})

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	p.stderr.waitFor(t, "first signal's message", 5*time.Second, func(s string) bool {
		return strings.Contains(s, "mcpvisor: shutting down (signal again to force)")
	})
	// The stubborn server holds the graceful shutdown up for twice the
	// manager's stop grace (2s + 2s), so the host is still shutting down.
	require.False(t, p.wait(0), "mcpvisor exited before the second signal")
	sent := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	if !p.wait(5 * time.Second) {
		t.Fatalf("mcpvisor still runs %v after the second SIGTERM", time.Since(sent))
	}
	assert.Equal(t, 130, p.cmd.ProcessState.ExitCode())
	assert.Contains(t, p.stderr.String(), "mcpvisor: forced exit")
}

// waitPidfile waits for a server to write its pid to path. There is nothing
// to wait on for a file another process writes, so this polls.
func waitPidfile(t *testing.T, path string) int {
	t.Helper()
	var b []byte // written by the check that succeeded, read after it
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := os.ReadFile(path)
		require.NoError(c, err)
		require.True(c, bytes.HasSuffix(got, []byte("\n")), "no whole line in pid file %s: %q", path, got)
		b = got
	}, 10*time.Second, 10*time.Millisecond)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err, "pid file %s", path)
	return pid
}

// `mcpvisor demo-server` speaks MCP on stdio to any client.
func TestDemoServerSubcommand(t *testing.T) {
	noLeftovers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(mcpvisorBin, "demo-server")
	cmd.Env = binaryEnv()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	ownPIDs.Store(cmd.Process.Pid, struct{}{})
	defer func() { t.Logf("demo-server stderr:\n%s", stderr.String()) }()

	init := cs.InitializeResult()
	require.Equal(t, "mcpvisor-demo", init.ServerInfo.Name)
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	require.Equal(t, []string{"add", "echo", "fail", "sleep"}, names)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	require.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)

	// Close closes the server's stdin and reaps it; an exit status other
	// than 0 would be its error.
	require.NoError(t, cs.Close(), "demo-server exit")
	require.NotNil(t, cmd.ProcessState, "CommandTransport reaped the server")
	require.Equal(t, 0, cmd.ProcessState.ExitCode())
	checkNoRace(t, stderr.String())
}

// The built-in default config is the documented startup.lua, byte for byte.
func TestDefaultStartupIsRepositoryStartup(t *testing.T) {
	embedded, err := os.ReadFile("default_startup.lua")
	require.NoError(t, err)
	repo, err := os.ReadFile(repoStartup)
	require.NoError(t, err)
	require.True(t, bytes.Equal(repo, embedded),
		"cmd/mcpvisor/default_startup.lua differs from startup.lua; run: cp startup.lua cmd/mcpvisor/default_startup.lua")
	require.Equal(t, string(repo), defaultStartup, "the embedded copy")
}

// The interactive REPL on a terminal. github.com/creack/pty is not a
// dependency, so util-linux script(1) provides the pseudo-terminal; the
// test is skipped where it is missing.
func TestREPL(t *testing.T) {
	term := startREPL(t)
	p := term.p

	term.waitLine("first prompt", func(l string) bool { return l == "mcp>" })
	term.typeLine("return 1+1")
	term.waitLine("result of 1+1", func(l string) bool { return l == "2" })

	// A bare expression prints its value; the demo server is up.
	term.typeLine(`assert(mcp_wait("demo", "connected")) and mcp_status("demo").pid`)
	pidLine := term.waitLine("demo pid", func(l string) bool {
		_, err := strconv.Atoi(l)
		return err == nil && l != "2"
	})
	pid, _ := strconv.Atoi(pidLine)

	// Multi-line input continues with the ">> " prompt.
	term.typeLine("for i = 1, 2 do")
	term.waitLine("continuation prompt", func(l string) bool { return l == ">>" })
	term.typeLine(`print("line " .. i)`)
	term.typeLine("end")
	term.waitLine("loop output", func(l string) bool { return l == "line 2" })

	// Ctrl-C interrupts the running chunk, not the REPL.
	term.typeLine(`print("sleeping") sleep(60)`)
	term.waitLine("chunk running", func(l string) bool { return l == "sleeping" })
	term.send("\x03")
	term.waitLine("interrupted chunk", func(l string) bool { return strings.Contains(l, "error: interrupted") })
	term.typeLine("return 40+2")
	term.waitLine("result after Ctrl-C", func(l string) bool { return l == "42" })

	// Ctrl-D on an empty line exits 0 after a clean shutdown.
	term.send("\x04")
	if !p.wait(shutdownGrace) {
		t.Fatalf("the REPL did not exit after Ctrl-D; screen:\n%s", strings.Join(term.lines(), "\n"))
	}
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "exit code")
	requireGone(t, pid, "demo server")
}

// startREPL runs the binary with args in the pty of script(1), so that it
// starts its interactive REPL. It skips the test without util-linux's
// script(1).
func startREPL(t *testing.T, args ...string) *terminal {
	t.Helper()
	return startREPLEnv(t, nil, args...)
}

// startREPLEnv is startREPL with env added to the environment.
func startREPLEnv(t *testing.T, env []string, args ...string) *terminal {
	t.Helper()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed; it provides the REPL's terminal (creack/pty is not a dependency)")
	}
	if out, err := exec.Command(scriptBin, "--version").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("util-linux")) {
		t.Skipf("script(1) is not util-linux's (%s %v); the test needs its -q -e -c", bytes.TrimSpace(out), err)
	}
	command := "exec"
	for _, a := range append([]string{mcpvisorBin}, args...) {
		command += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	// script -q: no banner; -e: exit with the child's status; -c: run the
	// command; /dev/null: no typescript file.
	p := start(t, invocation{
		argv: []string{scriptBin, "-qec", command, "/dev/null"},
		env:  append([]string{"SHELL=/bin/sh", "TERM=xterm"}, env...),
	})
	return &terminal{t: t, p: p}
}

// terminal drives a program through the pty of script(1): it types input
// and reads the output as screen lines.
type terminal struct {
	t    *testing.T
	p    *process
	seen int // lines before this index were matched already
}

func (term *terminal) send(s string) {
	term.t.Helper()
	_, err := term.p.stdin.Write([]byte(s))
	require.NoError(term.t, err)
}

// typeLine types s and Enter.
func (term *terminal) typeLine(s string) { term.t.Helper(); term.send(s + "\r") }

func (term *terminal) lines() []string { return screenLines(term.p.stdout.String()) }

// waitLine waits for a screen line, after the last one matched, that ok
// accepts, and returns it.
func (term *terminal) waitLine(what string, ok func(string) bool) string {
	term.t.Helper()
	var found string
	term.p.stdout.waitFor(term.t, what, 20*time.Second, func(raw string) bool {
		lines := screenLines(raw)
		for i := term.seen; i < len(lines); i++ {
			if ok(lines[i]) {
				found, term.seen = lines[i], i+1
				return true
			}
		}
		return false
	})
	return found
}

// screenLines renders terminal output as the lines a screen would show:
// carriage return and backspace move the cursor, text overwrites, CSI
// sequences that erase (J, K) cut the line at the cursor, C and D move the
// cursor, other escape sequences are dropped. Trailing blanks are trimmed
// (the prompt "mcp> " shows as "mcp>").
func screenLines(raw string) []string {
	var out []string
	for _, l := range strings.Split(raw, "\n") {
		var line []rune
		cur := 0
		rs := []rune(l)
		for i := 0; i < len(rs); i++ {
			switch r := rs[i]; {
			case r == '\r':
				cur = 0
			case r == '\b':
				cur = max(0, cur-1)
			case r == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
				j := i + 2
				for j < len(rs) && (rs[j] < '@' || rs[j] > '~') {
					j++
				}
				if j >= len(rs) {
					i = len(rs)
					break
				}
				n, err := strconv.Atoi(string(rs[i+2 : j]))
				if err != nil || n == 0 {
					n = 1
				}
				switch rs[j] {
				case 'J', 'K':
					line = line[:min(cur, len(line))]
				case 'C':
					cur += n
				case 'D':
					cur = max(0, cur-n)
				}
				i = j
			case r < ' ':
				// other control characters do not print
			default:
				for len(line) < cur {
					line = append(line, ' ')
				}
				if cur < len(line) {
					line[cur] = r
				} else {
					line = append(line, r)
				}
				cur++
			}
		}
		out = append(out, strings.TrimRight(string(line), " "))
	}
	return out
}
