//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// At the REPL (here without the HUD) the lifecycle's INFO lines go to the
// log file the banner names; the terminal shows a failure once, not a
// failed call's WARN beside its result, and at exit says how often the
// failure repeated.
func TestREPLQuietLogs(t *testing.T) {
	state := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "startup.lua")
	require.NoError(t, os.WriteFile(cfg, []byte(`mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
mcp_add("broken", {command = {"sh", "-c", "echo no config >&2; exit 3"}, backoff = {initial = "20ms", max = "50ms"}, breaker = false})
`), 0o644))
	logFile := filepath.Join(state, "mcpvisor", "mcpvisor.log")
	term := startREPLEnv(t, []string{"XDG_STATE_HOME=" + state}, "--no-hud", "--no-watch", "-c", cfg)

	term.waitLine("the banner", func(l string) bool { return strings.HasPrefix(l, "mcpvisor REPL — ") })
	term.waitLine("the log file", func(l string) bool {
		return l == "Logs go to "+logFile+"; warnings and errors show here too."
	})
	term.typeLine(`while mcp_status("broken").attempts < 8 do sleep(0.02) end return "many"`)
	term.waitLine("eight failures", func(l string) bool { return l == "many" })
	term.typeLine(`mcp_call("demo.nope", {})`)
	term.waitLine("the failed call's error", func(l string) bool { return strings.Contains(l, `code = "TOOL_NOT_FOUND"`) })
	term.waitLine("the prompt", func(l string) bool { return l == "mcp>" })
	term.send("\x04")
	if !term.p.wait(shutdownGrace) {
		t.Fatalf("the REPL did not exit after Ctrl-D; screen:\n%s", strings.Join(term.lines(), "\n"))
	}
	require.Equal(t, 0, term.p.cmd.ProcessState.ExitCode())

	screen := strings.Join(term.lines(), "\n")
	assert.Equal(t, 1, strings.Count(screen, `msg="backing off, will retry"`), "the failure shown once; screen:\n%s", screen)
	assert.Regexp(t, `level=WARN msg="failed \d+ more times the same way" server=broken kind=backoff as="backing off, will retry" error=`, screen)
	assert.NotContains(t, screen, "level=INFO", "INFO lines go to the log file")
	assert.NotContains(t, screen, "tool call failed", "the call's result already says it failed")

	b, err := os.ReadFile(logFile)
	require.NoError(t, err)
	log := string(b)
	assert.Contains(t, log, `level=INFO msg="server connected" seq=`)
	assert.Contains(t, log, `level=WARN msg="tool call failed"`)
	assert.GreaterOrEqual(t, len(regexp.MustCompile(`msg="backing off, will retry"`).FindAllString(log, -1)), 8, "every failure is in the log file")
}
