//go:build linux

package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// The config chooses each client's mode in Lua: mcp_client_mode gives the
// client that calls itself "picky" search mode and leaves another the
// default (direct), and a toolset declared with mode = "code" offers its
// clients run_lua, over one `mcpvisor serve --http`.
func TestServeClientModeFromLua(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo")+`
mcp_client_mode(function(client)
	if client.name == "picky" and client.endpoint == "/mcp" then return "search" end
end)
mcp_toolset("dev", {include = {"demo.*"}, mode = "code"})
`)
	p := start(t, invocation{dir: dir, args: []string{"serve", "--http", "127.0.0.1:0", "-c", path, "--no-watch", "--log-level", "info"}})
	log := p.stderr.waitFor(t, "the serving log line", 20*time.Second, servingURL.MatchString)
	base := servingURL.FindStringSubmatch(log)[1]

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	connect := func(name, path string) *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + path, MaxRetries: -1}, nil)
		require.NoError(t, err, "connect %s to %s", name, path)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	for _, tt := range []struct {
		client, path string
		want         []string
	}{
		{"picky", "/mcp", []string{"search_tools", "describe_tools", "call_tool", "mcpvisor_status"}},
		{"other", "/mcp", []string{"demo__add", "demo__echo", "demo__fail", "demo__sleep", "mcpvisor_status"}},
		{"other", "/toolsets/dev/mcp", []string{"run_lua"}},
	} {
		t.Run(tt.client+tt.path, func(t *testing.T) {
			cs := connect(tt.client, tt.path)
			got := listedTools(t, ctx, cs, 20*time.Second, "the tools of its mode", func(n []string) bool { return len(n) >= len(tt.want) })
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			require.Equal(t, want, got)
		})
	}
}
