package luaapi_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/luaapi"
)

// scriptsDir holds the Lua-level tests, relative to this package.
var scriptsDir = filepath.Join("..", "scripts")

// TestLuaScripts runs every global function test_* of every
// scripts/*_test.lua as a subtest named after the function, each in a
// fresh runtime over the in-memory demo server:
//
//	go test ./luaapi -run TestLuaScripts/test_echo
func TestLuaScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(scriptsDir, "*_test.lua"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no Lua tests in %s", scriptsDir)
	for _, file := range files {
		for _, name := range luaTestNames(t, file) {
			t.Run(name, func(t *testing.T) {
				r := newTestRuntime(t, nil, func(o *luaapi.Options) { o.ScriptDir = scriptsDir })
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err := r.ExecFile(ctx, file)
				require.NoError(t, err, "loading %s", file)
				if _, err := r.Exec(ctx, "return "+name+"()", name); err != nil {
					t.Fatalf("%s: %s", filepath.Base(file), describeLuaError(err))
				}
			})
		}
	}
}

// luaTestNames loads file and lists its global test_* functions, sorted.
func luaTestNames(t *testing.T, file string) []string {
	t.Helper()
	r := newTestRuntime(t, nil, func(o *luaapi.Options) { o.ScriptDir = scriptsDir })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.ExecFile(ctx, file)
	require.NoError(t, err, "loading %s", file)
	res, err := r.Exec(ctx, `
		local names = {}
		for k, v in pairs(_G) do
			if type(k) == "string" and k:match("^test_") and type(v) == "function" then names[#names + 1] = k end
		end
		table.sort(names)
		return table.concat(names, "\n")`, "list")
	require.NoError(t, err)
	require.Len(t, res.Values, 1)
	names := strings.Fields(res.Values[0])
	require.NotEmpty(t, names, "%s defines no test_* functions", file)
	return names
}

func describeLuaError(err error) string {
	if le, ok := err.(*luaapi.Error); ok && le.Traceback != "" {
		return le.Message + "\n" + le.Traceback
	}
	return err.Error()
}
