//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// check reports each declared process that could not start here, with the
// fix, under the table, and exits 1 when one is an error: a config that
// cannot run is not OK.
func TestCheckReportsWhatCannotStart(t *testing.T) {
	tests := []struct {
		name   string
		config string
		code   int
		want   []string // lines of stdout, after the table
	}{
		{
			name:   "program not on PATH",
			config: `mcp_add("x", {command = {"no-such-binary-zz"}})`,
			code:   1,
			want: []string{
				`startup.lua:1: error: server "x": spawn: program "no-such-binary-zz" not found on PATH; install it, or give its full path as the first element of command`,
				`startup.lua: 1 error, 1 server(s)`,
			},
		},
		{
			name:   "program and arguments in one string",
			config: `mcp_add("x", {command = {"sh -c true"}})`,
			code:   1,
			want: []string{
				`startup.lua:1: error: server "x": spawn: program "sh -c true" not found: it is the program and its arguments in one string; give each on its own: command = {"sh", "-c", "true"} (in JSON: "command": "sh", "args": ["-c", "true"])`,
				`startup.lua: 1 error, 1 server(s)`,
			},
		},
		{
			name:   "missing cwd",
			config: `mcp_add("x", {command = {"sh"}, cwd = "/nonexistent/mcpvisor-cwd"})`,
			code:   1,
			want: []string{
				`startup.lua:1: error: server "x": spawn: working directory "/nonexistent/mcpvisor-cwd" does not exist; create it or correct cwd`,
				`startup.lua: 1 error, 1 server(s)`,
			},
		},
		{
			name: "a disabled server is a warning",
			config: `mcp_add("ok", {command = {"sh"}})
mcp_add("later", {command = {"no-such-binary-zz"}, enabled = false})`,
			code: 0,
			want: []string{
				`startup.lua:2: warning: server "later": spawn: program "no-such-binary-zz" not found on PATH; install it, or give its full path as the first element of command`,
				`startup.lua: OK with 1 warning, 2 server(s)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "startup.lua")
			require.NoError(t, os.WriteFile(path, []byte(tt.config+"\n"), 0o644))
			o := runBinary(t, invocation{dir: dir, args: []string{"check", "-c", "startup.lua"}})
			require.Equal(t, tt.code, o.code, "exit code")
			lines := strings.Split(strings.TrimRight(o.stdout, "\n"), "\n")
			require.Greater(t, len(lines), len(tt.want))
			require.Equal(t, tt.want, lines[len(lines)-len(tt.want):])
		})
	}
}

// An unset ${VAR} stops check with the variable's name and how to set it.
func TestCheckUnsetVariable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	require.NoError(t, os.WriteFile(path, []byte(`mcp_add("x", {command = {"sh"}, env = {TOKEN = "${MCPVISOR_E2E_UNSET}"}})`+"\n"), 0o644))
	o := runBinary(t, invocation{dir: dir, args: []string{"check", "-c", path}})
	require.Equal(t, 1, o.code)
	require.Contains(t, o.stderr, `startup.lua:1: INVALID_CONFIG: server "x": config: env.TOKEN: environment variable MCPVISOR_E2E_UNSET is not set (referenced as ${MCPVISOR_E2E_UNSET}); set it where mcpvisor starts (export MCPVISOR_E2E_UNSET=…), or write the value`)
}

// The HUD section of docs/observability.md, typed on the built-in default config (one
// server): its latency line and its mcp_hud_model loop both work.
func TestREADMEHUDExamplesOnDefaultConfig(t *testing.T) {
	code := `assert(mcp_wait("demo", "connected"))
for i = 1, 5 do mcp_call("demo.echo", {text = "hi"}) end
local out = {type(mcp_metrics("demo").latency_ms)}
for _, r in ipairs(mcp_hud_model()) do
  out[#out + 1] = r.glyph .. " " .. r.name .. " " .. r.state .. " " .. (r.retry_in and string.format("retry in %.1fs", r.retry_in) or "")
end
return table.concat(out, "|")`
	o := runBinary(t, invocation{args: []string{"-e", code}})
	require.Equal(t, 0, o.code, o.stderr)
	require.Equal(t, "number|● demo connected \n", o.stdout)
}

// A Claude-style entry imported from JSON, its command line in one
// string, is shown at its file and entry, with the fix in JSON's terms.
func TestCheckImportedCommandLine(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "claude.json"),
		[]byte(`{"mcpServers": {"everything": {"command": "sh -c true"}}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "startup.lua"), []byte("mcp_import(\"claude.json\")\n"), 0o644))
	o := runBinary(t, invocation{dir: dir, args: []string{"check", "-c", "startup.lua"}})
	require.Equal(t, 1, o.code)
	lines := strings.Split(strings.TrimRight(o.stdout, "\n"), "\n")
	require.Len(t, lines, 4, o.stdout)
	require.Regexp(t, `^everything\s+stdio\s+sh -c true\s+claude\.json: mcpServers\["everything"\] \(mcp_import at startup\.lua:1\)$`, lines[1])
	require.Equal(t, `claude.json: mcpServers["everything"] (mcp_import at startup.lua:1): error: server "everything": spawn: program "sh -c true" not found: it is the program and its arguments in one string; give each on its own: command = {"sh", "-c", "true"} (in JSON: "command": "sh", "args": ["-c", "true"])`, lines[2])
}
