//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hinshun/vt10x"
	"github.com/stretchr/testify/require"
)

// hudStartup declares a server that connects and one that fails every
// 50–200ms, so events and HUD frames keep coming, and prints a line every
// 100ms. (The HUD shows the failures, so they are not logged to the
// terminal as well: the printed lines are what scrolls under the block.)
const hudStartup = `mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
mcp_add("broken", {command = {"sh", "-c", "exit 3"}, backoff = {initial = "50ms", max = "200ms"}, breaker = false})
mcp_every(0.1, function() print("tick") end)
`

// The broken server's line in the block, retrying or connecting again.
var (
	brokenRetrying   = regexp.MustCompile(`^↻ broken  stdio  0 tools  +retry in `)
	brokenConnecting = regexp.MustCompile(`^◌ broken  stdio  0 tools  +connecting \(attempt `)
)

// emulated is the screen of a terminal that the binary's pty output is
// played into (vt10x), read as the output grows.
type emulated struct {
	t    *testing.T
	p    *process
	vt   vt10x.Terminal
	seen int // bytes of p.stdout played into vt
}

// wait plays the output into the emulator until ok accepts the screen
// (and the output so far), failing the test after 20s, and returns the
// screen. ok runs at every write, so it sees states that last until the
// next one.
func (e *emulated) wait(what string, ok func(raw string, rows []string, cur vt10x.Cursor) bool) ([]string, vt10x.Cursor) {
	e.t.Helper()
	var rows []string
	var cur vt10x.Cursor
	e.p.stdout.waitFor(e.t, what, 20*time.Second, func(raw string) bool {
		// Play only whole runes: a read can end inside one.
		end := len(raw)
		for end > e.seen && !utf8.FullRuneInString(raw[lastRuneStart(raw, end):end]) {
			end = lastRuneStart(raw, end)
		}
		_, _ = e.vt.Write([]byte(raw[e.seen:end]))
		e.seen = end
		rows, cur = vtScreen(e.vt)
		return ok(raw[:end], rows, cur)
	})
	return rows, cur
}

// lastRuneStart is where the rune that ends at end starts.
func lastRuneStart(s string, end int) int {
	i := end - 1
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return max(i, 0)
}

func (e *emulated) send(s string) {
	e.t.Helper()
	_, err := e.p.stdin.Write([]byte(s))
	require.NoError(e.t, err)
}

// utilLinuxScript is the path of util-linux's script(1), which gives the
// REPL a terminal; a test without it is skipped.
func utilLinuxScript(t *testing.T) string {
	t.Helper()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) is not installed; it provides the REPL's terminal")
	}
	if out, err := exec.Command(scriptBin, "--version").CombinedOutput(); err != nil || !bytes.Contains(out, []byte("util-linux")) {
		t.Skipf("script(1) is not util-linux's (%s %v)", bytes.TrimSpace(out), err)
	}
	return scriptBin
}

// The HUD and the REPL share the terminal: while events redraw the block
// and log lines scroll under it, a half-typed line stays intact, the
// cursor in it, and the line runs as typed. Run through script(1)'s pty
// and a terminal emulator, so what is checked is the screen a person sees.
func TestHUDREPLTypingIntact(t *testing.T) {
	scriptBin := utilLinuxScript(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "startup.lua"), []byte(hudStartup), 0o644))
	const cols, rows = 100, 24
	p := start(t, invocation{
		dir: dir,
		// script's pty has no size when its stdin is a pipe: give it one.
		argv: []string{scriptBin, "-qec", fmt.Sprintf("stty rows %d cols %d; exec '%s' --log-level warn", rows, cols, mcpvisorBin), "/dev/null"},
		env:  []string{"SHELL=/bin/sh", "TERM=xterm"},
	})
	scr := &emulated{t: t, p: p, vt: vt10x.New(vt10x.WithSize(cols, rows))}
	rule := strings.Repeat("─", cols-1)

	// blockOK checks the block at the top: summary, the two servers, the rule.
	blockOK := func(screen []string) bool {
		// (the space before the state is wider once demo's tokens are in)
		broken := brokenRetrying.MatchString(screen[1]) || brokenConnecting.MatchString(screen[1])
		return strings.HasPrefix(screen[0], "mcpvisor: 2 servers · 1 connected · 1 ") && broken &&
			strings.HasPrefix(screen[2], "● demo    stdio  4 tools") && screen[3] == rule
	}
	scr.wait("the HUD and the prompt", func(_ string, screen []string, cur vt10x.Cursor) bool {
		return blockOK(screen) && screen[cur.Y] == "mcp>" && cur.Y > 3
	})

	// Type half a line and let frames and printed lines come over it.
	scr.send("return 6")
	scr.wait("the half-typed line", func(_ string, screen []string, cur vt10x.Cursor) bool {
		return screen[cur.Y] == "mcp> return 6"
	})
	// Readline redraws the line after each printed line; check the screen when
	// the last thing written was a HUD frame, drawn over the typed line.
	from := len(p.stdout.String())
	const frame = escSave + "\x1b[1;1H"
	screen, cur := scr.wait("a frame after frames and logs while typing", func(raw string, screen []string, _ vt10x.Cursor) bool {
		later := raw[from:]
		return strings.Count(later, frame) >= 3 && strings.Count(later, "tick") >= 3 &&
			strings.HasSuffix(raw, escRestore) && strings.LastIndex(raw, frame) > strings.LastIndex(raw, "mcp> return 6") &&
			blockOK(screen)
	})
	require.Equal(t, "mcp> return 6", screen[cur.Y], "the typed line; screen:\n%s", strings.Join(screen, "\n"))
	require.Equal(t, len("mcp> return 6"), cur.X, "the cursor where typing left it")
	typedRows := 0
	for i, l := range screen {
		if strings.Contains(l, "return 6") {
			typedRows++
		}
		if i > 3 {
			require.False(t, strings.HasPrefix(l, "mcpvisor:") || strings.HasPrefix(l, "● demo") || l == rule,
				"HUD text below the block in row %d; screen:\n%s", i, strings.Join(screen, "\n"))
		}
	}
	require.Equal(t, 1, typedRows, "the typed text appears once; screen:\n%s", strings.Join(screen, "\n"))
	require.Contains(t, strings.Join(screen[4:], "\n"), "tick", "printed lines scroll below the block")
	require.NotContains(t, p.stdout.String(), "level=", "the HUD shows the failures: no log line repeats them")
	require.NotContains(t, p.stdout.String(), "mcpvisor REPL", "the HUD says what the banner would")

	// The line runs as typed.
	scr.send("*7\r")
	scr.wait("the result", func(_ string, screen []string, cur vt10x.Cursor) bool {
		return cur.Y > 0 && screen[cur.Y] == "mcp>" && blockOK(screen) && slicesContain(screen[4:], "42")
	})

	// Ctrl-D: the block is erased and the scroll region reset on exit.
	scr.send("\x04")
	if !p.wait(shutdownGrace) {
		t.Fatalf("the REPL did not exit after Ctrl-D")
	}
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode())
	screen, _ = scr.wait("the exit", func(string, []string, vt10x.Cursor) bool { return true })
	for _, l := range screen { // the shutdown's log lines may have scrolled the screen since
		require.False(t, strings.HasPrefix(l, "mcpvisor:") || strings.HasPrefix(l, "● demo") || l == rule,
			"the block is erased at exit; screen:\n%s", strings.Join(screen, "\n"))
	}
	raw := p.stdout.String()
	require.Greater(t, strings.LastIndex(raw, escResetRegion), strings.LastIndex(raw, escSave+"\x1b[1;1H"),
		"the scroll region is reset after the last frame")
}

func slicesContain(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// With the gateway serving beside the REPL, the HUD's second line says
// what /mcp and each toolset's endpoint cost a model in their modes; the
// figure follows demo's tools as it connects.
func TestHUDShowsGatewayEndpoints(t *testing.T) {
	scriptBin := utilLinuxScript(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "startup.lua"), []byte(`mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
mcp_toolset("math", {include = {"demo.add"}, mode = "search"})
`), 0o644))
	const cols, rows = 100, 24
	p := start(t, invocation{
		dir:  dir,
		argv: []string{scriptBin, "-qec", fmt.Sprintf("stty rows %d cols %d; exec '%s' --http 127.0.0.1:0 --log-level warn", rows, cols, mcpvisorBin), "/dev/null"},
		env:  []string{"SHELL=/bin/sh", "TERM=xterm"},
	})
	scr := &emulated{t: t, p: p, vt: vt10x.New(vt10x.WithSize(cols, rows))}
	line := regexp.MustCompile(`^/mcp direct (\d+) tok · /toolsets/math search (\d+) tok$`)
	scr.wait("the endpoints' line with demo's tools in it", func(_ string, screen []string, _ vt10x.Cursor) bool {
		m := line.FindStringSubmatch(screen[1])
		// /mcp lists the status tool alone (under 100 tokens) until demo is
		// in, and demo's four tools beside it then.
		return m != nil && strings.HasPrefix(screen[2], "● demo  stdio  4 tools") && len(m[1]) >= 3
	})
	scr.send("\x04")
	if !p.wait(shutdownGrace) {
		t.Fatalf("the REPL did not exit after Ctrl-D")
	}
}
