//go:build linux

package main

// End-to-end tests of the config as desired state through the binary:
// `mcpvisor check`, hot reload of a running host (only the difference
// applied), --no-watch, and hooks printing through the REPL's readline.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// demoDecl declares a demo server (the binary itself) named name.
func demoDecl(name string) string {
	return fmt.Sprintf("mcp_add(%q, {command = {MCPVISOR, \"demo-server\"}})\n", name)
}

// writeConfig saves content at path the way editors do: a temporary file
// beside it, renamed over it.
func writeConfig(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// TestCheckCommand: `mcpvisor check` evaluates the config, prints each
// server with the file:line of its declaration and exits 0, starting
// nothing; a broken config exits 1 with file:line.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	require.NoError(t, os.WriteFile(path, []byte(`-- my servers
`+demoDecl("demo")+`
mcp_add("remote", {url = "http://127.0.0.1:3001/mcp?token=secret"})
mcp_add("off", {command = {"never-started"}, enabled = false})
mcp_on("connected", function(e) print("hook must not run") end)
`), 0o644))

	for _, args := range [][]string{{"check", "-c", path}, {"check"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			o := runBinary(t, invocation{dir: dir, args: args})
			require.Equal(t, 0, o.code, "exit code")
			lines := strings.Split(strings.TrimRight(o.stdout, "\n"), "\n")
			require.Len(t, lines, 6, "stdout:\n%s", o.stdout)
			require.Regexp(t, `^SERVER\s+TRANSPORT\s+ENDPOINT\s+DECLARED AT$`, lines[0])
			require.Regexp(t, `^demo\s+stdio\s+\S+/mcpvisor demo-server\s+startup\.lua:2$`, lines[1])
			require.Regexp(t, `^remote\s+http\s+http://127\.0\.0\.1:3001/mcp\s+startup\.lua:4$`, lines[2])
			require.Regexp(t, `^off\s+stdio\s+never-started \(disabled\)\s+startup\.lua:5$`, lines[3])
			require.Equal(t, `startup.lua:5: warning: server "off": spawn: program "never-started" not found on PATH; install it, or give its full path as the first element of command`, lines[4])
			require.True(t, strings.HasSuffix(lines[5], "startup.lua: OK with 1 warning, 3 server(s)"), lines[5])
			require.NotContains(t, o.stdout, "secret", "the endpoint is redacted")
			require.NotContains(t, o.stdout+o.stderr, "hook must not run")
			require.NotContains(t, o.stderr, "server added", "check starts nothing")
			require.NotContains(t, o.stderr, "connect attempt")
		})
	}

	tests := []struct {
		name, config string
		want         []string // in stderr
	}{
		{"duplicate name", demoDecl("demo") + "\n" + demoDecl("Demo"),
			[]string{`startup.lua:3: INVALID_CONFIG: server "Demo" is declared twice in startup.lua (first at startup.lua:1)`}},
		{"syntax error", demoDecl("demo") + "local x = = 1\n", []string{"startup.lua:2:11: near '='"}},
		{"invalid spec", `mcp_add("web", {url = "ftp://x"})` + "\n", []string{`startup.lua:1: INVALID_CONFIG: server "web"`}},
		{"runtime error", demoDecl("demo") + "error('nope')\n", []string{"error: startup.lua:2: nope\n"}},
		{"runtime error in a function", demoDecl("demo") + "local function f()\n  error('nope')\nend\nf()\n",
			[]string{"error: startup.lua:3: nope\nstack traceback:\n\t[G]: in function 'error'\n\tstartup.lua:3: in function 'f'\n\tstartup.lua:5: in main chunk\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "startup.lua")
			require.NoError(t, os.WriteFile(path, []byte(tt.config), 0o644))
			o := runBinary(t, invocation{dir: dir, args: []string{"check", "-c", path}})
			require.Equal(t, 1, o.code, "exit code")
			require.Empty(t, o.stdout)
			for _, want := range tt.want {
				require.Contains(t, o.stderr, want)
			}
			require.NotContains(t, o.stderr, "server added")
		})
	}
}

// check shows what a config holds without letting it act on the terminal:
// escape sequences, tabs and bidi overrides in a server's command are
// written out, and the columns stay aligned.
func TestCheckEscapesConfigText(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	require.NoError(t, os.WriteFile(path, []byte(`mcp_add("evil", {command = {"prog\27]0;PWNED\7", "a\tb", "\226\128\174exe"}})`+"\n"), 0o644))
	o := runBinary(t, invocation{dir: dir, args: []string{"check", "-c", path}})
	require.Equal(t, 1, o.code, "the program is not on PATH; stderr: %s", o.stderr)
	lines := strings.Split(strings.TrimRight(o.stdout, "\n"), "\n")
	require.Len(t, lines, 4, "stdout:\n%s", o.stdout)
	require.Regexp(t, `^evil\s+stdio\s+prog\\x1b\]0;PWNED\\x07 a\\tb \\u202eexe\s+startup\.lua:1$`, lines[1])
	require.Contains(t, lines[2], `program "prog\x1b]0;PWNED\a" not found on PATH`)
	require.NotContains(t, o.stdout, "\x1b")
	require.NotContains(t, o.stdout, "\u202e")
}

// runningHost is mcpvisor at its REPL (in the pty of script(1), without
// the HUD): Lua typed there runs line by line, and its log file is read
// for the lifecycle's INFO lines.
type runningHost struct {
	*terminal
	logFile string
	reloads int // "config reloaded" lines seen so far
}

// startHostREPL starts the REPL on a config.
func startHostREPL(t *testing.T, args ...string) *runningHost {
	t.Helper()
	state := t.TempDir()
	term := startREPLEnv(t, []string{"XDG_STATE_HOME=" + state}, append([]string{"--no-hud"}, args...)...)
	term.waitLine("first prompt", func(l string) bool { return l == "mcp>" })
	return &runningHost{terminal: term, logFile: filepath.Join(state, "mcpvisor", "mcpvisor.log")}
}

// eval runs a one-line expression in the host and returns its value as
// tostring gives it.
func (h *runningHost) eval(t *testing.T, expr string) string {
	t.Helper()
	h.typeLine(`return "=" .. tostring(` + expr + `)`)
	return strings.TrimPrefix(h.waitLine("the value of "+expr, func(l string) bool { return strings.HasPrefix(l, "=") }), "=")
}

// log is the host's log file so far.
func (h *runningHost) log(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(h.logFile)
	require.NoError(t, err)
	return string(b)
}

// waitLog waits until the log file says what ok wants. Nothing tells when
// another process writes a file, so this polls.
func (h *runningHost) waitLog(t *testing.T, what string, ok func(string) bool) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		log := h.log(t)
		assert.True(c, ok(log), "no %s in the log:\n%s", what, log)
	}, 20*time.Second, 20*time.Millisecond)
}

// exit types Ctrl-D at the prompt and waits for a clean exit.
func (h *runningHost) exit(t *testing.T) {
	t.Helper()
	h.send("\x04")
	require.True(t, h.p.wait(shutdownGrace+5*time.Second), "mcpvisor did not exit after Ctrl-D")
	require.Equal(t, 0, h.p.cmd.ProcessState.ExitCode(), "exit code; screen:\n%s", strings.Join(h.lines(), "\n"))
}

// servers is the host's server list, comma-separated.
func (h *runningHost) servers(t *testing.T) string {
	t.Helper()
	return h.eval(t, `table.concat(mcp_servers(), ",")`)
}

// pid is server name's process id, once it is connected.
func (h *runningHost) pid(t *testing.T, name string) int {
	t.Helper()
	v := h.eval(t, fmt.Sprintf(`assert(mcp_wait(%q, "connected")) and mcp_status(%q).pid`, name, name))
	pid, err := strconv.Atoi(v)
	require.NoError(t, err, "pid of %s: %q", name, v)
	return pid
}

// nextReload waits for the next "config reloaded" log line.
func (h *runningHost) nextReload(t *testing.T) {
	t.Helper()
	h.reloads++
	h.waitLog(t, fmt.Sprintf("reload #%d", h.reloads), func(s string) bool {
		return strings.Count(s, `msg="config reloaded"`) >= h.reloads
	})
}

// serversBecome polls the server list until it is want: the reload has
// been logged, but there is nothing to wait on in the host from here.
func (h *runningHost) serversBecome(t *testing.T, want string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, want, h.servers(t), "the servers")
	}, 10*time.Second, 20*time.Millisecond)
}

// waitGone waits for a process to exit (and be reaped by its parent).
func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	// Nothing to wait on for another process's child.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		state, _, ok := procState(pid)
		assert.False(c, ok, "%s (pid %d) still there in state %c", what, pid, state)
	}, 10*time.Second, 10*time.Millisecond)
}

// TestConfigHotReload: a running host whose config is edited on disk adds
// and removes servers, leaving unchanged ones running; a broken edit keeps
// the servers and logs config_error with file:line; fixing it applies
// again.
func TestConfigHotReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	require.NoError(t, os.WriteFile(path, []byte(demoDecl("a")+demoDecl("b")), 0o644))
	h := startHostREPL(t, "-c", path)

	require.Equal(t, "a,b", h.servers(t))
	aPid, bPid := h.pid(t, "a"), h.pid(t, "b")

	// b goes, c comes, a stays as it is.
	writeConfig(t, path, demoDecl("a")+demoDecl("c"))
	h.nextReload(t)
	h.serversBecome(t, "a,c")
	cPid := h.pid(t, "c")
	require.Equal(t, aPid, h.pid(t, "a"), "a was not touched")
	waitGone(t, bPid, "removed server b")
	require.Regexp(t, `msg="config applied" seq=\d+ kind=config_applied added=\[c\] file=\S+ removed=\[b\] replaced=\[\] unchanged=1`, h.log(t))

	// A broken edit: nothing changes, config_error with file:line.
	writeConfig(t, path, demoDecl("a")+"local x = = 1\n"+demoDecl("d"))
	h.waitLog(t, "config_error", func(s string) bool {
		return strings.Contains(s, "kind=config_error")
	})
	require.Regexp(t, `level=ERROR msg="config not applied" seq=\d+ kind=config_error error="startup\.lua:2:11: near '=': syntax error"`, h.log(t))
	require.Equal(t, "a,c", h.servers(t))
	require.Equal(t, aPid, h.pid(t, "a"))
	require.Equal(t, cPid, h.pid(t, "c"))

	// A runtime error half-way through the file changes nothing either.
	writeConfig(t, path, demoDecl("a")+demoDecl("d")+"error('half-way')\n")
	h.waitLog(t, "second config_error", func(s string) bool {
		return strings.Contains(s, `error="startup.lua:3: half-way"`)
	})
	require.Equal(t, "a,c", h.servers(t))

	// Fixed: applied against the last good config. c's spec changes, so
	// it is replaced (a new process); a stays.
	writeConfig(t, path, demoDecl("a")+`mcp_add("c", {command = {MCPVISOR, "demo-server"}, env = {V = "2"}})`+"\n")
	h.nextReload(t)
	h.serversBecome(t, "a,c")
	newC := h.pid(t, "c")
	require.NotEqual(t, cPid, newC, "c was replaced")
	waitGone(t, cPid, "replaced server c")
	require.Equal(t, aPid, h.pid(t, "a"))

	// A server added at the REPL survives reloads.
	h.typeLine(strings.TrimSpace(demoDecl("mine")))
	writeConfig(t, path, demoDecl("a"))
	h.nextReload(t)
	h.serversBecome(t, "a,mine")
	waitGone(t, newC, "removed server c")

	h.exit(t)
	requireGone(t, aPid, "server a")
}

// TestNoWatchIgnoresEdits: with --no-watch, edits on disk change nothing.
func TestNoWatchIgnoresEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	require.NoError(t, os.WriteFile(path, []byte(demoDecl("a")), 0o644))
	h := startHostREPL(t, "--no-watch", "-c", path)
	require.Equal(t, "a", h.servers(t))
	aPid := h.pid(t, "a")

	writeConfig(t, path, demoDecl("b"))
	// Ten debounce periods: a watching host reloads well within that.
	time.Sleep(10 * reloadDebounce) // waiting for something not to happen
	require.Equal(t, "a", h.servers(t))
	require.Equal(t, aPid, h.pid(t, "a"))
	require.NotContains(t, h.log(t), "config reloaded")
	require.NotContains(t, h.log(t), "config_applied added=[b]")

	h.exit(t)
}

// TestREPLHookOutputDoesNotGarbleTyping: a timer prints while a line is
// being typed; readline puts the tick above the prompt and redraws the
// typed part, and the line runs as typed.
func TestREPLHookOutputDoesNotGarbleTyping(t *testing.T) {
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed; it provides the REPL's terminal")
	}
	if out, err := exec.Command(scriptBin, "--version").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("util-linux")) {
		t.Skipf("script(1) is not util-linux's (%s %v)", bytes.TrimSpace(out), err)
	}
	p := start(t, invocation{
		argv: []string{scriptBin, "-qec", "exec '" + mcpvisorBin + "' --log-level warn", "/dev/null"},
		env:  []string{"SHELL=/bin/sh", "TERM=xterm"},
	})
	term := &terminal{t: t, p: p}
	term.waitLine("first prompt", func(l string) bool { return l == "mcp>" })
	term.typeLine(`ticker = mcp_every(0.05, function() print("tick") end)`)
	term.waitLine("a tick", func(l string) bool { return l == "tick" })

	// Type half a line, let ticks print over it, then finish it.
	term.send("return 6")
	term.waitLine("the half-typed line", func(l string) bool { return l == "mcp> return 6" })
	term.waitLine("a tick while typing", func(l string) bool { return l == "tick" })
	term.waitLine("the half-typed line redrawn", func(l string) bool { return l == "mcp> return 6" })
	term.send("*7\r")
	term.waitLine("the result", func(l string) bool { return l == "42" })

	term.typeLine("mcp_off(ticker)")
	term.typeLine(`return "after " .. "off"`)
	term.waitLine("the last result", func(l string) bool { return l == "after off" })
	// Ctrl-D only once the prompt is back: readline leaves raw mode while
	// a chunk runs, and a Ctrl-D then is the tty's end-of-file, which stops
	// readline's reader for good (the REPL then ignores all input).
	term.waitLine("the prompt", func(l string) bool { return l == "mcp>" })
	term.send("\x04")
	if !p.wait(shutdownGrace) {
		t.Fatalf("the REPL did not exit after Ctrl-D; screen:\n%s", strings.Join(term.lines(), "\n"))
	}
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode())

	// Every tick is a line of its own: none was written into the prompt
	// line or the typed text.
	screen := term.lines()
	// off is set at mcp_off's result: a tick printed after it would have
	// run after mcp_off (one printed after the typed line but before the
	// chunk ran is fine).
	ticks, offTyped, off := 0, false, false
	typed := regexp.MustCompile(`^mcp> return 6(\*7)?$`)
	for _, l := range screen {
		ours := strings.NewReplacer("ticker", "", `print("tick")`, "").Replace(l) // the commands typed
		switch {
		case l == "tick":
			ticks++
			require.False(t, off, "a tick after mcp_off; screen:\n%s", strings.Join(screen, "\n"))
		case strings.Contains(ours, "tick"):
			t.Errorf("garbled line %q; screen:\n%s", l, strings.Join(screen, "\n"))
		case strings.HasPrefix(l, "mcp> return 6") && !typed.MatchString(l):
			t.Errorf("garbled input line %q", l)
		case l == "mcp> mcp_off(ticker)":
			offTyped = true
		case offTyped && l == "true":
			off = true
		}
	}
	require.GreaterOrEqual(t, ticks, 2)
}
