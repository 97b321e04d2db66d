//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// A startup.lua that never returns no longer keeps the gateway from
// listening: it is stopped at its time budget with its file and line in
// the log, and the server it declared before the loop is served.
func TestServeWithALoopingConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo")+"while true do end\n")
	p := start(t, invocation{dir: dir, args: []string{"serve", "--http", "127.0.0.1:0", "-c", path, "--log-level", "info", "--config-budget", "300ms"}})
	log := p.stderr.waitFor(t, "the serving log line", 20*time.Second, servingURL.MatchString)
	base := servingURL.FindStringSubmatch(log)[1]
	require.Contains(t, p.stderr.String(), "startup.lua:2: stopped: the config ran for 300ms without finishing")

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cs := serveClient(t, ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, make(chan struct{}, 1))
	defer cs.Close()
	listedTools(t, ctx, cs, 20*time.Second, "demo__echo listed", func(n []string) bool { return slices.Contains(n, "demo__echo") })
	require.Equal(t, "still here", echoText(t, ctx, cs, "demo__echo", "still here"))

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.True(t, p.wait(shutdownGrace+2*time.Second), "mcpvisor serve --http still runs after SIGTERM")
}

// A config stopped at its budget after its mcp_serve listener failed to
// start stops the host, as that failure alone does: the budget lets the
// host go on only when it is all that went wrong.
func TestLoopingConfigWhoseListenerFailedStops(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, fmt.Sprintf("mcp_serve{http = %q}\nwhile true do end\n", busy.Addr().String()))
	out := runBinary(t, invocation{dir: dir, args: []string{"-c", path, "--config-budget", "300ms", "-e", `print("ran")`}})
	require.Equal(t, 1, out.code, "stderr: %s", out.stderr)
	require.NotContains(t, out.stdout, "ran")
	require.Contains(t, out.stderr, "stopped: the config ran for 300ms")
	require.Contains(t, out.stderr, "mcp_serve(http =")
}
