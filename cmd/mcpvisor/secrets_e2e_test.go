//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A value substituted from the environment is used but never shown: not in
// status, events, logs at debug level, spans or check — whether it sits in
// a command's arguments, an env value, a URL or a header.
func TestSecretsNeverShown(t *testing.T) {
	const secret = "s3cr3t-val-42"
	dir := t.TempDir()
	cfg := `mcp_add("proc", {command = {MCPVISOR, "demo-server", "--token=${MCPV_SECRET}"}, env = {API_KEY = "${MCPV_SECRET}"}})
mcp_add("remote", {url = "http://127.0.0.1:9/mcp?key=${MCPV_SECRET}", headers = {Authorization = "Bearer ${MCPV_SECRET}"}, max_retries = 0})
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "startup.lua"), []byte(cfg), 0o644))
	env := []string{"MCPV_SECRET=" + secret, "OTEL_TRACES_EXPORTER=console", "OTEL_METRICS_EXPORTER=console"}
	run := runBinary(t, invocation{dir: dir, env: env, args: []string{"--log-level", "debug", "-e", `
		assert(mcp_wait("proc", "connected"))
		mcp_wait("remote", "failed", 10)
		mcp_call("proc.echo", {text = "x"})
		return json.encode(mcp_status()) .. json.encode(mcp_events(200))`}})
	require.Equal(t, 0, run.code, run.stderr)
	require.Contains(t, run.stdout, `--token=${MCPV_SECRET}`, "the status shows the reference")
	check := runBinary(t, invocation{dir: dir, env: env, args: []string{"check"}})
	for name, out := range map[string]string{"status and events": run.stdout, "logs and spans": run.stderr,
		"check": check.stdout + check.stderr} {
		require.NotContains(t, out, secret, name)
	}
}
