package luaapi_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/luaapi"
)

// A config that never finishes is stopped at its time budget with an error
// naming its file and line, instead of holding the Lua loop for good. At
// start, what it declared before is applied (the host comes up with those
// servers); a reload that runs over changes nothing; time spent waiting is
// not running time.
func TestConfigStoppedAtItsBudget(t *testing.T) {
	r := newTestRuntime(t, nil, func(o *luaapi.Options) { o.ConfigBudget = 300 * time.Millisecond })
	path := filepath.Join(t.TempDir(), "startup.lua")
	load := func(src string) error {
		ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
		defer cancel()
		_, err := r.LoadConfigSource(ctx, path, src)
		return err
	}

	err := load("mcp_add(\"a\", {command = {\"demo\"}})\nwhile true do end\n")
	require.ErrorIs(t, err, luaapi.ErrConfigBudget)
	require.Contains(t, err.Error(), "startup.lua:2: stopped: the config ran for 300ms without finishing")
	require.Equal(t, "a", r.one(t, `return table.concat(mcp_servers(), ",")`), "what it declared before the loop is applied")

	err = load("mcp_add(\"a\", {command = {\"demo\"}})\nmcp_add(\"b\", {command = {\"demo\"}})\nlocal function spin() while true do end end\nspin()\n")
	require.ErrorIs(t, err, luaapi.ErrConfigBudget)
	require.Contains(t, err.Error(), "startup.lua:3: stopped")
	require.Equal(t, "a", r.one(t, `return table.concat(mcp_servers(), ",")`), "a reload that runs over changes nothing")

	// pcall cannot keep it going.
	err = load("mcp_add(\"b\", {command = {\"demo\"}})\nwhile true do pcall(function() while true do end end) end\n")
	require.ErrorIs(t, err, luaapi.ErrConfigBudget)
	require.Equal(t, "a", r.one(t, `return table.concat(mcp_servers(), ",")`))

	require.NoError(t, load("for i = 1, 4 do sleep(0.1) end\nmcp_add(\"a\", {command = {\"demo\"}})\nmcp_add(\"c\", {command = {\"demo\"}})\n"))
	require.Equal(t, "a,c", r.one(t, `return table.concat(mcp_servers(), ",")`))
}
