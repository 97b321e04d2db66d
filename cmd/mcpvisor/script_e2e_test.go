//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `mcpvisor run FILE args` runs the file as lua runs it: arg holds the
// command line (the file at 0, its arguments from 1, what came before it
// below 0), flags may come before or after run, what it returns is not
// printed, and an error exits 1 with file:line. Piped into run -, stdin is
// the script.
func TestRunFile(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "s.lua")
	require.NoError(t, os.WriteFile(script, []byte(`#!/usr/bin/env mcpvisor
local n = #arg
print(arg[0] == ...  and "?" or arg[0]:match("[^/]*$"), n, arg[1], arg[2], arg[-1])
print(mcp_call("demo.echo", {text = arg[1]}).text)
if arg[2] == "fail" then error("asked to fail") end
return "not printed"
`), 0o644))

	o := runBinary(t, invocation{args: []string{"run", script, "hello", "there"}})
	require.Equal(t, 0, o.code, "exit code")
	require.Equal(t, "s.lua\t2\thello\tthere\trun\nhello\n", o.stdout)
	require.Empty(t, o.stderr, "a script logs only warnings unless asked")

	o = runBinary(t, invocation{args: []string{"--no-watch", "run", "--wait", "10s", script, "hi", "fail"}})
	require.Equal(t, 1, o.code, "exit code")
	require.Equal(t, "s.lua\t2\thi\tfail\t10s\nhi\n", o.stdout)
	require.Contains(t, o.stderr, "error: "+script+":5: asked to fail\n")

	o = runBinary(t, invocation{args: []string{"run", "-", "x"}, stdin: `print(arg[0], arg[1]); local y = 2; print(y)`})
	require.Equal(t, 0, o.code, "exit code")
	require.Equal(t, "-\tx\n2\n", o.stdout)

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "mcpvisor: run needs a script: mcpvisor run FILE.lua [args] (or - for stdin)\n"},
		{[]string{"-e", "return 1", "run", script}, "mcpvisor: -e and run each give the code to run; give one\n"},
		{[]string{"--wait", "-1s", "-e", "return 1"}, "mcpvisor: --wait must be 0 (start at once) or more, got -1s\n"},
	} {
		o := runBinary(t, invocation{args: tt.args})
		require.Equal(t, 2, o.code, "exit code of %v", tt.args)
		require.Equal(t, tt.want+"Run 'mcpvisor --help' for usage.\n", o.stderr)
	}

	o = runBinary(t, invocation{args: []string{"run", filepath.Join(dir, "missing.lua")}})
	require.Equal(t, 1, o.code)
	require.Contains(t, o.stderr, "missing.lua: no such file or directory")
}

// Code that is not interactive starts once every server has settled: the
// demo server's tools are there for -e, for a piped script and for run.
func TestSettledStart(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "count.lua")
	require.NoError(t, os.WriteFile(script, []byte("print(#mcp_tools())\n"), 0o644))
	for _, inv := range []invocation{
		{args: []string{"-e", "return #mcp_tools()"}},
		{stdin: "print(#mcp_tools())\n"},
		{args: []string{"run", script}},
	} {
		o := runBinary(t, inv)
		require.Equal(t, 0, o.code, "exit code")
		require.Equal(t, "4\n", o.stdout, "%v %q", inv.args, inv.stdin)
	}
}

// The wait ends when each server is connected or has an answer that is not
// coming soon: one disabled, one given up after its only attempt, one
// backing off after a failure, one waiting for a connection slot. None of
// them holds the code back for the 30s --wait allows.
func TestSettledStartDoesNotWaitForTheHopeless(t *testing.T) {
	dir := t.TempDir()
	code := `local s = {}
for _, n in ipairs(mcp_servers()) do s[#s + 1] = n .. "=" .. mcp_status(n).state end
return #mcp_tools("demo") .. " " .. table.concat(s, " ")`
	for _, tt := range []struct {
		name, config string
		args         []string
		want         string
	}{
		{
			name: "disabled, failed, backing off",
			config: `mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
mcp_add("off", {command = {MCPVISOR, "demo-server"}, enabled = false})
mcp_add("gone", {command = {"/nonexistent/mcpvisor-e2e/x"}, max_retries = 0})
mcp_add("later", {command = {"sh", "-c", "exit 3"}, backoff = {initial = "1m", max = "1m"}})
`,
			want: "4 demo=connected gone=failed later=backoff off=disabled\n",
		},
		{
			name: "waiting for a connection slot",
			config: `mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
mcp_add("queued", {command = {MCPVISOR, "demo-server"}})
`,
			args: []string{"--max-connections", "1"},
			want: "4 demo=connected queued=connecting\n",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".lua")
			require.NoError(t, os.WriteFile(cfg, []byte(tt.config), 0o644))
			o := runBinary(t, invocation{args: append(tt.args, "--log-level", "info", "--wait", "30s", "-c", cfg, "-e", code)})
			require.Equal(t, 0, o.code, "exit code")
			require.Equal(t, tt.want, o.stdout)
			assert.NotContains(t, o.stderr, "starting before every server is up", "the wait did not end when every server had settled")
		})
	}
}

// --wait bounds the wait for a server that never answers, and says at info
// why it did not wait longer; --wait 0 starts at once, without waiting.
func TestSettledStartBound(t *testing.T) {
	cfg := testdata(t, "bad_servers.lua") // its mute server never answers
	code := `return mcp_status("mute").state`
	o := runBinary(t, invocation{args: []string{"--log-level", "info", "--wait", "1500ms", "-c", cfg, "-e", code}})
	require.Equal(t, 0, o.code)
	require.Equal(t, "connecting\n", o.stdout)
	assert.GreaterOrEqual(t, o.took, 1500*time.Millisecond, "run time: --wait not waited out")
	// The bound ended the wait (the others may or may not have settled by
	// then on a busy machine).
	assert.Regexp(t, `msg="starting before every server is up" waited=1.5s connecting=(\S+,)?mute\b`, o.stderr)

	o = runBinary(t, invocation{args: []string{"--log-level", "info", "--wait", "0", "-c", cfg, "-e", code}})
	require.Equal(t, 0, o.code)
	assert.NotContains(t, o.stderr, "starting before every server is up", "--wait 0 waited")
}
