//go:build linux

package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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

// check --tools starts the servers, says what each one's tools cost a
// model and what a client of /mcp and of each toolset is given to list in
// each mode, reports a server that fails without failing, and leaves no
// process behind. Plain check starts nothing.
func TestCheckToolsCosts(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	// The config serves on an address a running mcpvisor holds: check
	// measures the endpoints without listening.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	servers := `mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
mcp_add("broken", {command = {"sh", "-c", "exit 3"}, max_retries = 0})
mcp_toolset("math", {include = {"demo.add"}, mode = "search"})
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "startup.lua"), []byte(servers+`mcp_serve({http = "`+busy.Addr().String()+`"})
`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "servers.lua"), []byte(servers), 0o644))

	plain := runBinary(t, invocation{dir: dir, args: []string{"check"}})
	require.Equal(t, 0, plain.code, plain.stderr)
	require.NotContains(t, plain.stdout, "TOKENS", "plain check connects nothing")

	o := runBinary(t, invocation{dir: dir, args: []string{"check", "--tools", "--timeout", "20s"}})
	require.Equal(t, 0, o.code, "a server that fails is reported, not fatal; stderr:\n%s", o.stderr)
	out := o.stdout
	require.Contains(t, out, "startup.lua: OK, 2 server(s)", "the check itself comes first")

	demo := regexp.MustCompile(`(?m)^demo\s+connected\s+4\s+([\d,]+)$`).FindStringSubmatch(out)
	require.NotNil(t, demo, "demo's row; stdout:\n%s", out)
	require.Regexp(t, `(?m)^broken\s+failed\s+-\s+-$`, out)
	require.Regexp(t, `(?m)^broken: gave up after 1 attempt: .*exit status 3`, out, "the failure, with its error")

	// The same figure mcp_tools() gives each tool, summed.
	sum := runBinary(t, invocation{dir: dir, args: []string{"-c", "servers.lua", "-e", `assert(mcp_wait("demo", "connected"))
for _ = 1, 400 do
  local n, all = 0, true
  for _, t in ipairs(mcp_tools("demo")) do
    if t.tokens then n = n + t.tokens else all = false end
  end
  if all then return n end
  sleep(0.05)
end
error("mcp_tools never counted")`}})
	require.Equal(t, 0, sum.code, sum.stderr)
	require.Equal(t, strings.TrimSpace(sum.stdout), strings.ReplaceAll(demo[1], ",", ""), "demo's tokens are mcp_tools()' sum")

	endpoint := func(path string) (mode string, tools, direct, search, code int) {
		t.Helper()
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(path) + `\s+(\w+)\s+(\d+)\s+([\d,]+)\s+([\d,]+)\s+([\d,]+)$`).FindStringSubmatch(out)
		require.NotNil(t, m, "%s's row; stdout:\n%s", path, out)
		n := func(s string) int {
			v, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
			require.NoError(t, err)
			return v
		}
		return m[1], n(m[2]), n(m[3]), n(m[4]), n(m[5])
	}
	mode, tools, direct, search, code := endpoint("/mcp")
	assert.Equal(t, "direct", mode)
	assert.Equal(t, 4, tools)
	assert.Greater(t, direct, search, "search mode lists less than the catalogue")
	assert.Greater(t, direct, code, "code mode lists less than the catalogue")
	assert.Positive(t, search)
	assert.Positive(t, code)
	mode, tools, mathDirect, _, mathCode := endpoint("/toolsets/math/mcp")
	assert.Equal(t, "search", mode, "the toolset's own mode")
	assert.Equal(t, 1, tools)
	assert.Less(t, mathDirect, direct, "one tool costs less than four and the status tool")
	assert.Equal(t, code, mathCode, "run_lua names the same one server")
	assert.NotContains(t, out, "/servers/", "each server's own endpoint is its row")
}

// check's help says what --tools does; its flags are checked before
// anything runs; --mode is the default mode the endpoints are shown in.
func TestCheckToolsFlags(t *testing.T) {
	for _, args := range [][]string{{"help", "check"}, {"check", "--help"}} {
		o := runBinary(t, invocation{args: args})
		require.Equal(t, 0, o.code, o.stderr)
		require.True(t, strings.HasPrefix(o.stdout, "usage: mcpvisor check [-c FILE] [--tools"), o.stdout)
		require.Contains(t, o.stdout, "--timeout DURATION")
	}
	o := runBinary(t, invocation{args: []string{"check", "--tools", "--timeout", "0"}})
	require.Equal(t, 2, o.code)
	require.Contains(t, o.stderr, "mcpvisor check: --timeout must be more than 0, got 0s")
	o = runBinary(t, invocation{args: []string{"check", "--tools", "--mode", "lazy"}})
	require.Equal(t, 2, o.code)
	require.Contains(t, o.stderr, `mcpvisor check: --mode: mode "lazy": unknown; the modes are direct, search and code`)

	noLeftovers(t)
	o = runBinary(t, invocation{args: []string{"check", "--tools", "--mode", "search"}}) // the built-in default: demo
	require.Equal(t, 0, o.code, o.stderr)
	require.Regexp(t, `(?m)^/mcp\s+search\s+4\s+[\d,]+\s+[\d,]+\s+[\d,]+$`, o.stdout)
}
