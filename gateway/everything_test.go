package gateway_test

// The official reference server, server-everything, behind the gateway.
// These tests skip when node or the pinned server is not installed (npm ci
// --prefix internal/interop), and fail when MCPVISOR_INTEROP=1, as in CI.

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
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
				case <-time.After(10 * time.Second):
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

// server-everything asks its client for a form (trigger-elicitation-request),
// a completion (trigger-sampling-request) and its roots (get-roots-list);
// behind the gateway, the client that made the call answers, on stdio
// (2026-07-28: the questions come back as input requests of the call) and
// over streamable HTTP (2025-11-25: the gateway sends the client the
// requests). The server is per-client, so each client has an upstream
// session of its own, opened by its first call and closed when it leaves.
func TestEverythingAsksTheClient(t *testing.T) {
	t.Parallel()
	spec := everythingSpec(t)
	spec.Session = manager.SessionPerClient
	r := newRig(t, map[string]manager.Spec{"everything": spec}, gateway.HTTPOptions{})
	for _, transport := range []string{"stdio", "streamable HTTP"} {
		t.Run(transport, func(t *testing.T) {
			log := watchEvents(t, r.m)
			var mu sync.Mutex
			var elicited []*mcp.ElicitParams
			var sampled []*mcp.CreateMessageParams
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "answering", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					elicited = append(elicited, req.Params)
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "check": true}}, nil
				},
				CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
					mu.Lock()
					sampled = append(sampled, req.Params)
					mu.Unlock()
					return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "Hello from the client"}}, nil
				},
			})
			c.AddRoots(&mcp.Root{URI: "file:///home/ada/project", Name: "project"})
			var tr mcp.Transport
			if transport == "stdio" {
				tr = r.stdio(t, "")
			} else {
				tr = r.streamable("/mcp")
			}
			cs, err := c.Connect(ctx, tr, sessionOver(tr))
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			label := log.next(t, events.KindClientConnected, 30*time.Second, nil).Text("client")

			pollUntil(t, 30*time.Second, "the asking tools listed", func() bool {
				names := toolNames(t, cs)
				return slices.Contains(names, "everything__get-roots-list") &&
					slices.Contains(names, "everything__trigger-elicitation-request") &&
					slices.Contains(names, "everything__trigger-sampling-request")
			})

			// Roots first: on a session of its own the server asks for them
			// during this call, not before.
			res := call(t, cs, "everything__get-roots-list", map[string]any{})
			require.False(t, res.IsError, text(res))
			assert.Contains(t, text(res), "file:///home/ada/project")

			res = call(t, cs, "everything__trigger-elicitation-request", map[string]any{})
			require.False(t, res.IsError, text(res))
			assert.Contains(t, text(res), "User provided the requested information")
			assert.Contains(t, text(res), "- Name: Ada")

			res = call(t, cs, "everything__trigger-sampling-request", map[string]any{"prompt": "Say hello", "maxTokens": 20})
			require.False(t, res.IsError, text(res))
			assert.Contains(t, text(res), "Hello from the client")

			mu.Lock()
			require.Len(t, elicited, 1)
			assert.Equal(t, "Please provide inputs for the following fields:", elicited[0].Message)
			require.Len(t, sampled, 1)
			require.Len(t, sampled[0].Messages, 1)
			assert.Equal(t, "Resource trigger-sampling-request context: Say hello", sampled[0].Messages[0].Content.(*mcp.TextContent).Text)
			mu.Unlock()

			require.NoError(t, cs.Close())
			e := log.next(t, events.KindSessionClosed, 30*time.Second, func(e events.Event) bool { return e.Server == "everything" })
			assert.Equal(t, label, e.Text("client"), "the client's own session closes when it leaves")
		})
	}
}
