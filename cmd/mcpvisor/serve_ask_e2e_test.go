//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
)

// A server behind `mcpvisor serve` learns at its first connection that its
// client can answer elicitation, sampling and roots (the gateway's clients
// may), and its question reaches the editor's client, whose answer comes
// back. With -e and no handler, nothing is declared.
func TestServeDeclaresWhatClientsAnswer(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, `mcp_add("a", {command = {"`+fakemcptest.Build(t)+`", "--ask"}})`+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := command(ctx, t, invocation{dir: dir, args: []string{"serve", "-c", path}})
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "from the editor: " + r.Params.Message}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	ownPIDs.Store(cmd.Process.Pid, struct{}{})
	defer cs.Close()
	listedTools(t, ctx, cs, 20*time.Second, "the server's tools", func(n []string) bool { return len(n) > 0 })

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__capabilities", Arguments: map[string]any{}})
	require.NoError(t, err)
	caps := res.Content[0].(*mcp.TextContent).Text
	for _, k := range []string{"elicitation", "sampling", "roots"} {
		require.Contains(t, caps, k, "declared capabilities: %s", caps)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__ask", Arguments: map[string]any{
		"method": "elicitation/create",
		"params": map[string]any{"message": "Name?", "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}},
	}})
	require.NoError(t, err)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "from the editor: Name?")

	o := runBinary(t, invocation{dir: dir, args: []string{"-c", path, "-e", `assert(mcp_wait("a", "connected")); return mcp_call("a.capabilities").text`}})
	require.Equal(t, 0, o.code, o.stderr)
	require.Equal(t, "{}", strings.TrimSpace(o.stdout))
}

// A client answering a server's question may report progress on it: the
// report reaches the server that asked, under the server's own token.
func TestServeRelaysProgressOnQuestions(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	record := filepath.Join(dir, "record")
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, `mcp_add("a", {command = {"`+fakemcptest.Build(t)+`", "--ask", "--record=`+record+`"}})`+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := command(ctx, t, invocation{dir: dir, args: []string{"serve", "-c", path}})
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			token := r.Params.GetProgressToken()
			if token == nil {
				return nil, errors.New("the question carries no progress token")
			}
			if err := r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 0.5, Total: 1}); err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	ownPIDs.Store(cmd.Process.Pid, struct{}{})
	defer cs.Close()
	listedTools(t, ctx, cs, 20*time.Second, "the server's tools", func(n []string) bool { return len(n) > 0 })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "a__ask", Arguments: map[string]any{
		"method": "elicitation/create",
		"params": map[string]any{"message": "Long?", "_meta": map[string]any{"progressToken": "up-1"}},
	}})
	require.NoError(t, err)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, `"decline"`)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		b, _ := os.ReadFile(record)
		assert.Contains(c, string(b), `notifications/progress progressToken="up-1" progress=0.5`, "the client's progress never reached the server")
	}, 10*time.Second, 10*time.Millisecond)
}
