package gateway_test

// The official reference server, server-everything, behind the gateway.
// These tests skip when node or the pinned server is not installed (npm ci
// --prefix internal/interop), and fail when MCPVISOR_INTEROP=1, as in CI.

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/interop"
	"github.com/mcpvisor/mcpvisor/manager"
)

// everythingSpec declares server-everything over stdio.
func everythingSpec(t testing.TB) manager.Spec {
	t.Helper()
	cmd := interop.StdioCommand(t)
	base := map[string]bool{}
	for _, kv := range os.Environ() {
		base[kv] = true
	}
	env := map[string]string{}
	for _, kv := range interop.Env() {
		if !base[kv] {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	return manager.Spec{Transport: manager.TransportStdio, Command: cmd, Env: env}
}

func TestEverything(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"everything": everythingSpec(t)}, gateway.HTTPOptions{})
	r.wait("everything")
	for _, transport := range []string{"stdio", "streamable HTTP"} {
		t.Run(transport, func(t *testing.T) {
			n := newNotes()
			var tr mcp.Transport
			if transport == "stdio" {
				tr = r.stdio(t, "")
			} else {
				tr = r.streamable("/mcp")
			}
			cs := connect(t, tr, n)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			names := toolNames(t, cs)
			for _, tool := range interop.BaseTools {
				assert.Contains(t, names, "everything__"+tool)
			}

			res := call(t, cs, "everything__echo", map[string]any{"message": "hi"})
			require.False(t, res.IsError, text(res))
			require.Equal(t, "Echo: hi", text(res))
			res = call(t, cs, "everything__get-sum", map[string]any{"a": 2, "b": 3})
			require.False(t, res.IsError, text(res))
			require.Contains(t, text(res), "5")

			t.Run("progress", func(t *testing.T) {
				params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation",
					Arguments: map[string]any{"duration": 0.3, "steps": 3}}
				params.SetProgressToken("tok-" + transport)
				res, err := cs.CallTool(ctx, params)
				require.NoError(t, err)
				require.False(t, res.IsError, text(res))
				// All three arrive, in order, under the client's own token:
				// the gateway lets progress still on its way when the call
				// returns settle before it sends the result. (The test's own
				// go-sdk client may hand a notification to its handler just
				// after returning the result, hence the short poll.)
				pollUntil(t, 2*time.Second, "three progress notifications", func() bool { return len(n.progressSeen()) >= 3 })
				got := n.progressSeen()
				require.Len(t, got, 3)
				for i, p := range got {
					assert.Equal(t, "tok-"+transport, p.ProgressToken, "the client's own token")
					assert.Equal(t, float64(i+1), p.Progress)
					assert.Equal(t, float64(3), p.Total)
				}
			})

			t.Run("cancel", func(t *testing.T) {
				cctx, ccancel := context.WithCancel(ctx)
				defer ccancel()
				params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation",
					Arguments: map[string]any{"duration": 30, "steps": 30}}
				params.SetProgressToken("cancel-me")
				before := len(n.progressSeen())
				got := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(cctx, params)
					got <- err
				}()
				pollUntil(t, 10*time.Second, "the operation runs", func() bool { return len(n.progressSeen()) > before })
				ccancel()
				select {
				case err := <-got:
					require.ErrorIs(t, err, context.Canceled)
				case <-time.After(2 * time.Second):
					t.Fatal("the cancelled call did not return")
				}
				// The gateway still answers this client.
				res := call(t, cs, "everything__echo", map[string]any{"message": "after"})
				require.Equal(t, "Echo: after", text(res))
			})

			t.Run("resources", func(t *testing.T) {
				list, err := cs.ListResources(ctx, nil)
				require.NoError(t, err)
				require.NotEmpty(t, list.Resources)
				uri := list.Resources[0].URI
				read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
				require.NoError(t, err, "read %s", uri)
				require.NotEmpty(t, read.Contents)
				assert.Equal(t, uri, read.Contents[0].URI)

				templates, err := cs.ListResourceTemplates(ctx, nil)
				require.NoError(t, err)
				require.NotEmpty(t, templates.ResourceTemplates)
				read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://resource/dynamic/text/7"})
				require.NoError(t, err, "read through a template")
				require.NotEmpty(t, read.Contents)
			})

			t.Run("prompts", func(t *testing.T) {
				list, err := cs.ListPrompts(ctx, nil)
				require.NoError(t, err)
				var names []string
				for _, p := range list.Prompts {
					names = append(names, p.Name)
				}
				require.Contains(t, names, "everything__simple-prompt")
				require.Contains(t, names, "everything__args-prompt")
				got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "everything__simple-prompt"})
				require.NoError(t, err)
				require.Len(t, got.Messages, 1)
				assert.Equal(t, "This is a simple prompt without arguments.", got.Messages[0].Content.(*mcp.TextContent).Text)
				got, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "everything__args-prompt", Arguments: map[string]string{"city": "Paris"}})
				require.NoError(t, err)
				require.NotEmpty(t, got.Messages)
				assert.Contains(t, got.Messages[0].Content.(*mcp.TextContent).Text, "Paris")
			})
		})
	}
}
