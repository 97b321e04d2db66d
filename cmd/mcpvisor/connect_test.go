package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tempHome points HOME and the config directory at a fresh directory, as a
// new user's machine.
func tempHome(t *testing.T) string {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("CODEX_HOME", "")
	t.Setenv("MCPVISOR_TOKEN", "")
	return home
}

func runCmd(t *testing.T, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

func TestInitWritesTheUserConfigAndImports(t *testing.T) {
	home := tempHome(t)
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".cursor"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".cursor", "mcp.json"),
		[]byte(`{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}, "mcpvisor": {"command": "x"}}}`), 0o600))

	code, out, errOut := runCmd(t, "init", "--yes")
	require.Equal(t, 0, code, errOut)
	path := filepath.Join(home, ".config", "mcpvisor", "startup.lua")
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), defaultStartup), "the default comes first")
	assert.Contains(t, string(got), `mcp_add("memory", {
  command = {"npx", "-y", "@modelcontextprotocol/server-memory"},
})`)
	assert.NotContains(t, string(got), `mcp_add("mcpvisor"`, "mcpvisor's own entry is not imported")
	assert.Contains(t, out, "1 imported server(s): memory")

	// Again: the config exists, --yes keeps it, and nothing is declared twice.
	code, out, _ = runCmd(t, "init", "--yes")
	require.Equal(t, 0, code)
	again, _ := os.ReadFile(path)
	assert.Equal(t, string(got), string(again))
	assert.Contains(t, out, "Nothing to change")

	// Without a terminal and without --yes nothing is decided for the user.
	require.NoError(t, os.Remove(path))
	code, _, errOut = runCmd(t, "init")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "--yes")
	assert.NoFileExists(t, path)
}

func TestTheUserConfigIsTheDefault(t *testing.T) {
	home := tempHome(t)
	t.Chdir(t.TempDir())
	path := filepath.Join(home, ".config", "mcpvisor", "startup.lua")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte("x = 42\n"), 0o600))
	got, src, err := startupSource("")
	require.NoError(t, err)
	assert.Equal(t, path, got)
	assert.Equal(t, "x = 42\n", src)

	require.NoError(t, os.WriteFile("startup.lua", []byte("y = 1\n"), 0o600))
	got, _, err = startupSource("")
	require.NoError(t, err)
	assert.Equal(t, "startup.lua", got, "./startup.lua still wins")
}

func TestConnectAndDisconnect(t *testing.T) {
	home := tempHome(t)
	file := filepath.Join(home, "claude.json")
	original := "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"memory\": {\n      \"command\": \"npx\"\n    }\n  }\n}\n"
	require.NoError(t, os.WriteFile(file, []byte(original), 0o600))

	code, out, errOut := runCmd(t, "connect", "claude-code", "--config", file, "--yes")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `+    "mcpvisor": {`, "the change is shown as a diff")
	var doc struct {
		NumStartups int                       `json:"numStartups"`
		MCPServers  map[string]map[string]any `json:"mcpServers"`
	}
	data, _ := os.ReadFile(file)
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, 3, doc.NumStartups)
	require.Contains(t, doc.MCPServers, "memory")
	entry := doc.MCPServers["mcpvisor"]
	exe, _ := os.Executable()
	exe, _ = filepath.EvalSymlinks(exe)
	startup := filepath.Join(home, ".config", "mcpvisor", "startup.lua")
	assert.Equal(t, map[string]any{"type": "stdio", "command": exe, "args": []any{"serve", "-c", startup}}, entry)
	assert.FileExists(t, startup, "connect makes the config its entry runs")
	backups, _ := filepath.Glob(file + ".bak-*")
	require.Len(t, backups, 1)
	kept, _ := os.ReadFile(backups[0])
	assert.Equal(t, original, string(kept))

	code, _, errOut = runCmd(t, "disconnect", "claude-code", "--config", file, "--yes")
	require.Equal(t, 0, code, errOut)
	data, _ = os.ReadFile(file)
	assert.Equal(t, original, string(data), "disconnect gives back the file as it was")
}

func TestConnectMoveTakesTheClientsServers(t *testing.T) {
	home := tempHome(t)
	file := filepath.Join(home, "cursor.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"mcpServers": {"memory": {"command": "npx", "args": ["m"]}, "web": {"url": "http://127.0.0.1:9/mcp"}}}`), 0o600))
	code, out, errOut := runCmd(t, "connect", "cursor", "--config", file, "--move", "--yes")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Moved memory, web")
	var doc map[string]map[string]any
	data, _ := os.ReadFile(file)
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, []string{"mcpvisor"}, keys(doc["mcpServers"]))
	startup, _ := os.ReadFile(filepath.Join(home, ".config", "mcpvisor", "startup.lua"))
	assert.Contains(t, string(startup), "mcp_add(\"memory\", {\n  command = {\"npx\", \"m\"},\n})")
	assert.Contains(t, string(startup), "mcp_add(\"web\", {\n  url = \"http://127.0.0.1:9/mcp\",\n})")
}

// disconnect --restore undoes connect --move: the servers go back into the
// client's file as they were, their declarations leave startup.lua, and
// what the user wrote there (before and after) stays.
func TestDisconnectRestoreUndoesMove(t *testing.T) {
	home := tempHome(t)
	file := filepath.Join(home, "cursor.json")
	original := `{"mcpServers": {"memory": {"command": "npx", "args": ["m"], "env": {"K": "v"}}, "web": {"url": "http://127.0.0.1:9/mcp"}}}`
	require.NoError(t, os.WriteFile(file, []byte(original), 0o600))
	startup := filepath.Join(home, ".config", "mcpvisor", "startup.lua")
	mine := "-- mine\nmcp_add(\"web\", {url = \"http://127.0.0.1:9/mcp\"})\n"
	require.NoError(t, os.MkdirAll(filepath.Dir(startup), 0o700))
	require.NoError(t, os.WriteFile(startup, []byte(mine), 0o600))

	code, _, errOut := runCmd(t, "connect", "cursor", "--config", file, "--move", "--yes")
	require.Equal(t, 0, code, errOut)
	later := "\nmcp_add(\"later\", {command = {\"x\"}})\n"
	f, err := os.OpenFile(startup, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(later)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	// Without the backups there is nothing to restore from: nothing changes.
	backups, _ := filepath.Glob(file + ".bak-*")
	require.Len(t, backups, 1)
	require.NoError(t, os.Rename(backups[0], filepath.Join(home, "away")))
	moved, _ := os.ReadFile(startup)
	code, _, errOut = runCmd(t, "disconnect", "cursor", "--config", file, "--restore", "--yes")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "put them back by hand")
	now, _ := os.ReadFile(startup)
	assert.Equal(t, string(moved), string(now))
	require.NoError(t, os.Rename(filepath.Join(home, "away"), backups[0]))

	code, out, errOut := runCmd(t, "disconnect", "cursor", "--config", file, "--restore", "--yes")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Put memory, web back")
	data, _ := os.ReadFile(file)
	assert.JSONEq(t, original, string(data), "the client's servers are back as they were, mcpvisor gone")
	now, _ = os.ReadFile(startup)
	assert.Equal(t, mine+later, string(now), "only the moved declarations leave startup.lua")
	kept, _ := filepath.Glob(startup + ".bak-*")
	assert.Len(t, kept, 1, "startup.lua's old text is kept")

	code, out, _ = runCmd(t, "disconnect", "cursor", "--config", file, "--restore", "--yes")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "nothing to change")
}

func TestConnectHTTPAndErrors(t *testing.T) {
	home := tempHome(t)
	t.Setenv("MCPVISOR_TOKEN", "secret-token-value")
	file := filepath.Join(home, "mcp.json")
	code, _, errOut := runCmd(t, "connect", "vscode", "--config", file, "--http", "http://127.0.0.1:8931", "--toolset", "dev", "--yes")
	require.Equal(t, 0, code, errOut)
	data, _ := os.ReadFile(file)
	assert.JSONEq(t, `{"servers": {"mcpvisor": {"type": "http", "url": "http://127.0.0.1:8931/toolsets/dev/mcp",
		"headers": {"Authorization": "Bearer ${env:MCPVISOR_TOKEN}"}}}}`, string(data))
	assert.NotContains(t, string(data), "secret-token-value", "the token stays in the environment")

	code, _, errOut = runCmd(t, "connect", "claude-desktop", "--config", file, "--http", "http://127.0.0.1:8931/mcp", "--yes")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "commands only")

	code, _, errOut = runCmd(t, "connect", "cursr")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `did you mean "cursor"`)

	require.NoError(t, os.WriteFile(file, []byte("{\n // mine\n \"servers\": {}\n}"), 0o600))
	code, _, errOut = runCmd(t, "connect", "vscode", "--config", file, "--yes")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "by hand")
	data, _ = os.ReadFile(file)
	assert.Contains(t, string(data), "// mine", "a file mcpvisor cannot edit is left alone")
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSubcommandUsage(t *testing.T) {
	tempHome(t)
	for _, cmd := range [][]string{{"init"}, {"service", "install"}} {
		code, out, _ := runCmd(t, append(cmd, "--help")...)
		assert.Equal(t, 0, code, cmd)
		assert.Contains(t, out, "Usage: mcpvisor "+cmd[0], "help goes to stdout")
		code, _, errOut := runCmd(t, append(cmd, "stray")...)
		assert.Equal(t, 2, code, cmd)
		assert.Contains(t, errOut, `unexpected argument "stray"`)
	}
}
