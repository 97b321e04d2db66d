//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
)

// evilReply is what the evil server answers every call with: a window
// title (OSC ended by BEL), a screen clear (CSI) and a bidi override.
const (
	evilReply = `A\x1b]0;PWNED\x07\x1b[2JB\u202e`
	// rawOSC is the start of the title sequence as a terminal would act on it.
	rawOSC = "\x1b]0;PWNED"
)

// evilConfig writes a config declaring the server "evil", which answers
// every tool call with evilReply, and returns its path.
func evilConfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "evil.lua")
	cfg := `mcp_add("evil", {command = {"` + fakemcptest.Build(t) + `", "--reply=` + strings.ReplaceAll(evilReply, `\`, `\\`) + `"}})` + "\n"
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// A server's escape sequences never reach the terminal through what the
// host prints: -e's result, an error a script raises with the server's
// text (a bare expression's value at the REPL is the next test). They show
// escaped instead. print, which the user asks for, stays raw.
func TestServerEscapesShownEscaped(t *testing.T) {
	cfg := evilConfig(t)
	script := `assert(mcp_wait("evil", "connected"))
local text = mcp_call("evil.echo", {text = "x"}).text
error(text)
`
	o := runBinary(t, invocation{args: []string{"-c", cfg, "--no-watch"}, stdin: script})
	assert.Equal(t, 1, o.code, "error() fails the script")
	assert.Empty(t, o.stdout)
	assert.Contains(t, o.stderr, "error: stdin:3: "+evilReply+"\n")
	assert.NotContains(t, o.stdout+o.stderr, rawOSC)

	o = runBinary(t, invocation{args: []string{"-c", cfg, "--no-watch", "-e",
		`assert(mcp_wait("evil", "connected")) return mcp_call("evil.echo", {text = "x"}).text`}})
	assert.Equal(t, 0, o.code, "stderr: %s", o.stderr)
	assert.Equal(t, evilReply+"\n", o.stdout)

	o = runBinary(t, invocation{args: []string{"-c", cfg, "--no-watch", "-e",
		`assert(mcp_wait("evil", "connected")) print(mcp_call("evil.echo", {text = "x"}).text)`}})
	assert.Contains(t, o.stdout, rawOSC, "print writes what the user asked for as it is")
}

// The same at the interactive REPL, on a terminal: the bytes that reach the
// terminal never hold the raw title sequence.
func TestREPLServerEscapesShownEscaped(t *testing.T) {
	term := startREPL(t, "-c", evilConfig(t), "--no-watch", "--no-hud")
	term.waitLine("first prompt", func(l string) bool { return l == "mcp>" })
	term.typeLine(`assert(mcp_wait("evil", "connected"))`)
	term.typeLine(`mcp_call("evil.echo", {text = "x"}).text`)
	term.waitLine("escaped result", func(l string) bool { return strings.HasSuffix(l, evilReply) })
	term.send("\x04")
	term.p.wait(shutdownGrace)
	assert.NotContains(t, term.p.stdout.String(), rawOSC)
}
