package luaapi_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/stretchr/testify/require"
)

// importRuntime is a runtime whose config directory holds mcp.json, as a
// Claude Desktop style file.
func importRuntime(t *testing.T, json string) (*testRuntime, string) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "mcp.json"), []byte(json), 0o644))
	r := newTestRuntime(t, nil, func(o *luaapi.Options) { o.ScriptDir = filepath.Join(dir, "scripts") })
	return r, dir
}

const claudeConfig = `{"mcpServers": {
  "git": {"command": "uvx", "args": ["mcp-server-git"]},
  "off": {"command": "x", "disabled": true, "autoApprove": ["t"]}
}}`

// At the REPL, mcp_import adds each entry of an mcpServers JSON file at
// once, like mcp_add; a relative path is taken from the config's directory.
func TestMcpImportAtTheREPL(t *testing.T) {
	r, _ := importRuntime(t, claudeConfig)
	require.Equal(t, "git,off", r.one(t, `return table.concat(mcp_import("mcp.json"), ",")`))
	require.Equal(t, []string{"git", "off"}, r.m.Names())
	spec, err := r.m.Spec("git")
	require.NoError(t, err)
	require.Equal(t, []string{"uvx", "mcp-server-git"}, spec.Command)
	require.Equal(t, "disabled", r.one(t, `return mcp_status("off").state`))
}

// Inside the config file, imported entries join the desired set and are
// applied with the rest of the file, only if the whole file succeeds.
func TestMcpImportInConfig(t *testing.T) {
	r, dir := importRuntime(t, claudeConfig)
	cfg := filepath.Join(dir, "startup.lua")

	_, err := r.LoadConfigSource(context.Background(), cfg, `mcp_import("mcp.json")`+"\n"+`error("broken")`)
	require.Error(t, err)
	require.Empty(t, r.m.Names(), "a failed file declares nothing")

	res, err := r.LoadConfigSource(context.Background(), cfg, `mcp_import("mcp.json")`)
	require.NoError(t, err)
	require.Equal(t, []string{"git", "off"}, res.Added)

	_, err = r.LoadConfigSource(context.Background(), cfg, `mcp_import("mcp.json")`+"\n"+`mcp_add("GIT", {command = {"x"}})`)
	require.ErrorContains(t, err, `server "GIT" is declared twice`)
}

// Imported servers are declared at their file and entry, which check
// shows, and a duplicate names both places.
func TestMcpImportDeclaredAt(t *testing.T) {
	r, dir := importRuntime(t, claudeConfig)
	decls, err := r.CheckConfig(context.Background(), filepath.Join(dir, "startup.lua"), "-- mine\nmcp_import(\"mcp.json\")")
	require.NoError(t, err)
	require.Len(t, decls, 2)
	require.Equal(t, `mcp.json: mcpServers["git"] (mcp_import at startup.lua:2)`, decls[0].Where)
	require.Equal(t, `mcp.json: mcpServers["off"] (mcp_import at startup.lua:2)`, decls[1].Where)

	_, err = r.CheckConfig(context.Background(), filepath.Join(dir, "startup.lua"), "mcp_import(\"mcp.json\")\nmcp_add(\"git\", {command = {\"x\"}})")
	require.ErrorContains(t, err, `(first at mcp.json: mcpServers["git"] (mcp_import at startup.lua:1))`)
}

// A path starting with ~/ is in the home directory, as in a shell.
func TestMcpImportHome(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".config"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".config", "claude.json"), []byte(claudeConfig), 0o644))
	r := newTestRuntime(t, nil, func(o *luaapi.Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "HOME" {
				return home, true
			}
			return "", false
		}
	})
	require.Equal(t, "git,off", r.one(t, `return table.concat(mcp_import("~/.config/claude.json"), ",")`))
}

// A bad entry raises one error naming the file and the entry; nothing of
// the file is declared.
func TestMcpImportErrors(t *testing.T) {
	r, _ := importRuntime(t, `{"mcpServers": {"ok": {"command": "x"}, "bad": {"comand": "y"}}}`)
	e := r.fail(t, `mcp_import("mcp.json")`)
	require.Contains(t, e.Message, `INVALID_CONFIG: import: mcp.json: mcpServers["bad"]: unknown key "comand"; did you mean "command"?`)
	require.Empty(t, r.m.Names())

	e = r.fail(t, `mcp_import("missing.json")`)
	require.True(t, strings.Contains(e.Message, "mcp_import:") && strings.Contains(e.Message, "missing.json"), e.Message)
}
