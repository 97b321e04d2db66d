//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Gateway usage errors exit 2 before any server starts, with a message
// that says what to do.
func TestServeBadUsage(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	weak := filepath.Join(t.TempDir(), "weak")
	require.NoError(t, os.WriteFile(weak, []byte("hunter2\n"), 0o600))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"open address without a token", []string{"serve", "--http", "0.0.0.0:8931"},
			`mcpvisor serve: refusing to serve on 0.0.0.0:8931 without a token: it is not a loopback address, so anyone who can reach it could use every server; set MCPVISOR_TOKEN or pass --token-file FILE (clients then send "Authorization: Bearer <token>"), or bind 127.0.0.1` + "\n"},
		{"beside the REPL too", []string{"--http", "[::]:8931", "-e", "1"},
			`mcpvisor: refusing to serve on [::]:8931 without a token: it is not a loopback address, so anyone who can reach it could use every server; set MCPVISOR_TOKEN or pass --token-file FILE (clients then send "Authorization: Bearer <token>"), or bind 127.0.0.1` + "\nRun 'mcpvisor --help' for usage.\n"},
		{"open address with a guessable token", []string{"serve", "--http", "0.0.0.0:8931", "--token-file", weak},
			"mcpvisor serve: refusing to serve on 0.0.0.0:8931 with this token: it is not a loopback address, and the token looks like about 36 bits of entropy " +
				"where at least 256 (32 random bytes) are needed to resist guessing; make one with `openssl rand -hex 32 > FILE` and pass --token-file FILE, or bind 127.0.0.1\n"},
		{"a port alone", []string{"serve", "--http", "8931"},
			`mcpvisor serve: --http "8931": want host:port, e.g. 127.0.0.1:8931` + "\n"},
		{"an empty token file", []string{"serve", "--http", "127.0.0.1:0", "--token-file", empty},
			"mcpvisor serve: --token-file " + empty + " is empty; put the token in it (for example: openssl rand -hex 32 > " + empty + ")\n"},
		{"server and toolset", []string{"serve", "--server", "a", "--toolset", "b"},
			"mcpvisor serve: --server and --toolset each choose what to serve; give one\nRun 'mcpvisor --help' for usage.\n"},
		{"server without serve", []string{"--server", "demo", "-e", "1"},
			"mcpvisor: --server and --toolset choose what `mcpvisor serve` serves; use them with serve\nRun 'mcpvisor --help' for usage.\n"},
		{"a name budget too small", []string{"serve", "--name-budget", "10"},
			"mcpvisor serve: --name-budget must be from 16 to 128 characters, got 10\nRun 'mcpvisor --help' for usage.\n"},
		{"no tool calls for run_lua", []string{"serve", "--code-calls", "0"},
			"mcpvisor serve: --code-calls must be 1 or more, got 0\nRun 'mcpvisor --help' for usage.\n"},
		{"an unknown mode", []string{"serve", "--mode", "lazy"},
			"mcpvisor serve: --mode: mode \"lazy\": unknown; the modes are direct, search and code\nRun 'mcpvisor --help' for usage.\n"},
		{"a meta-prefix no client accepts", []string{"serve", "--mode", "search", "--meta-prefix", "mv."},
			"mcpvisor serve: --meta-prefix must be 1 to 16 of the characters a-z A-Z 0-9 _ -, got \"mv.\"\nRun 'mcpvisor --help' for usage.\n"},
		{"an undeclared server", []string{"serve", "--server", "nope", "--log-level", "error"},
			"mcpvisor serve: --server nope: no such server in startup.lua; declared: demo\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := runBinary(t, invocation{args: tt.args, env: []string{"MCPVISOR_TOKEN="}})
			require.Equal(t, 2, o.code, "exit code; stderr: %s", o.stderr)
			require.Empty(t, o.stdout, "stdout")
			require.Equal(t, tt.want, o.stderr)
		})
	}
}

// A guessable view token is refused on an address that is not loopback,
// as a guessable token is: it shows every server's state and errors.
func TestServeRefusesAWeakViewToken(t *testing.T) {
	strong := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(strong, []byte("3f9c2b7a1e6d4c8b9a0f1e2d3c4b5a69788796a5b4c3d2e1f001122334455667\n"), 0o600))
	o := runBinary(t, invocation{args: []string{"serve", "--http", "0.0.0.0:8931", "--token-file", strong},
		env: []string{"MCPVISOR_TOKEN=", "MCPVISOR_VIEW_TOKEN=hunter2"}})
	require.Equal(t, 2, o.code, "exit code; stderr: %s", o.stderr)
	require.Contains(t, o.stderr, "mcpvisor serve: MCPVISOR_VIEW_TOKEN: refusing to serve on 0.0.0.0:8931 with this token")
}
