//go:build linux

package main

// End to end: the gateway driven from startup.lua (mcp_serve, mcp_toolset)
// through the binary, followed across reloads.

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// freeAddr is a loopback address nothing listens on (a port the kernel
// just handed out and took back).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestMcpServeFromConfig: a config that declares mcp_serve and a toolset
// serves them over HTTP; mcp_clients sees the client; a reload that drops
// mcp_serve closes the listener.
func TestMcpServeFromConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	addr := freeAddr(t)
	config := demoDecl("demo") + fmt.Sprintf(`mcp_serve{http = %q}
mcp_toolset("echoes", {include = {"demo.echo*"}})
`, addr)
	require.NoError(t, os.WriteFile(path, []byte(config), 0o644))
	h := startHostREPL(t, "-c", path)
	require.Equal(t, "true", h.eval(t, `mcp_wait("demo", "connected")`))

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-client", Version: "v9"}, nil)
	// In the generation with sessions: a sessionless client is never
	// listed among the connected ones.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/toolsets/echoes/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err, "the listener the config declared is up")
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	require.NotEmpty(t, names)
	for _, n := range names {
		require.Regexp(t, `^demo__echo`, n, "the toolset serves only what its patterns select: %v", names)
	}
	require.True(t, slices.Contains(names, "demo__echo"), "%v", names)
	require.Equal(t, "e2e-client v9 /toolsets/echoes/mcp", h.eval(t,
		`(function() local c = mcp_clients()[1]; return c.name .. " " .. c.version .. " " .. c.endpoint end)()`))
	require.NoError(t, cs.Close())

	writeConfig(t, path, demoDecl("demo"))
	h.nextReload(t)
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		conn.Close()
	}
	require.Error(t, err, "a reload without mcp_serve stops listening")
	h.exit(t)
}
