package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// ttlServer is an in-process server with one tool, one prompt and one
// resource, whose lists carry the times to live in ttl (ms, by method).
func ttlServer(name string, ttl map[string]int) manager.Spec {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ServerOptions{
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			switch req.(type) {
			case *mcp.ListToolsRequest:
				c.TTLMs = ttl["tools/list"]
			case *mcp.ListPromptsRequest:
				c.TTLMs = ttl["prompts/list"]
			case *mcp.ListResourcesRequest:
				c.TTLMs = ttl["resources/list"]
			}
		}})
	srv.AddTool(&mcp.Tool{Name: "get", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	srv.AddResource(&mcp.Resource{Name: "doc", URI: "ttl://" + name + "/doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	return manager.Spec{Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: srv}}
}

// A 2026-07-28 client's lists carry the smallest time to live the servers
// behind them gave theirs, a server without a hint not counting: on /mcp
// every server's, on a server's endpoint its own, on a toolset's the
// servers whose tools it lists.
func TestSessionlessListsCarryTheSmallestTTL(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{
		"fast": ttlServer("fast", map[string]int{"tools/list": 3000}),
		"slow": ttlServer("slow", map[string]int{"tools/list": 9000, "prompts/list": 4000, "resources/list": 6000}),
	}, gateway.HTTPOptions{})
	r.gw.SetToolsets(map[string]gateway.Toolset{"slowonly": {Include: []string{"slow.*"}}})
	r.wait("fast")
	r.wait("slow")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		path                      string
		tools, prompts, resources int
	}{
		{"/mcp", 3000, 4000, 6000},
		{"/servers/fast/mcp", 3000, 0, 0},
		{"/servers/slow/mcp", 9000, 4000, 6000},
		{"/toolsets/slowonly/mcp", 9000, -1, -1},
	} {
		c := mcp.NewClient(&mcp.Implementation{Name: "cacher", Version: "1"}, nil)
		cs, err := c.Connect(ctx, r.streamable(tc.path), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
		require.NoError(t, err, tc.path)
		require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
		tools, err := cs.ListTools(ctx, nil)
		require.NoError(t, err, tc.path)
		assert.NotEmpty(t, tools.Tools, tc.path)
		assert.Equal(t, tc.tools, tools.TTLMs, "%s tools/list", tc.path)
		if tc.prompts >= 0 {
			prompts, err := cs.ListPrompts(ctx, nil)
			require.NoError(t, err, tc.path)
			assert.Equal(t, tc.prompts, prompts.TTLMs, "%s prompts/list", tc.path)
			resources, err := cs.ListResources(ctx, nil)
			require.NoError(t, err, tc.path)
			assert.Equal(t, tc.resources, resources.TTLMs, "%s resources/list", tc.path)
		}
		require.NoError(t, cs.Close())
	}
}
