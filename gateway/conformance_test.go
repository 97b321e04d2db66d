package gateway_test

// The go-sdk's conformance everything-server, built from the module cache
// and run as a process behind /servers/NAME/mcp: which protocol generation
// mcpvisor speaks upstream decides what of the server reaches a client.

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// conformancePkg is the go-sdk's conformance server, a main package of the
// go-sdk module this one requires.
const conformancePkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// buildConformanceServer builds the conformance server into a temporary
// directory and returns the binary's path.
func buildConformanceServer(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	require.NoError(t, err, "the go command builds the conformance server")
	bin := filepath.Join(t.TempDir(), "everything-server")
	out, err := exec.Command(goTool, "build", "-o", bin, conformancePkg).CombinedOutput()
	require.NoError(t, err, "go build %s: %s", conformancePkg, out)
	return bin
}

// askingClient is a go-sdk client that answers forms with answer and
// sampling with a fixed text, keeping what it was asked.
type askingClient struct {
	mu       sync.Mutex
	elicited []*mcp.ElicitParams
	sampled  []*mcp.CreateMessageParams
}

func (a *askingClient) connect(t *testing.T, tr mcp.Transport, answer map[string]any) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.mu.Lock()
			a.elicited = append(a.elicited, req.Params)
			a.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: answer}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			a.mu.Lock()
			a.sampled = append(a.sampled, req.Params)
			a.mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "Paris"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, sessionOver(tr))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (a *askingClient) asked() ([]*mcp.ElicitParams, []*mcp.CreateMessageParams) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), a.elicited...), append([]*mcp.CreateMessageParams(nil), a.sampled...)
}

// A server that asks its client in the old way (elicitation/create and
// sampling/createMessage sent during a call) reaches a 2025-11-25 client
// through /servers/NAME/mcp, and a 2026-07-28 client through serve
// --server NAME: mcpvisor speaks 2025-11-25 with it by default, where a
// server may send requests. Pinned to 2026-07-28, the
// status says so, and the same tools fail the way the server fails them
// on that generation, while the tools asking through input requests are
// carried to the client as requests on its call.
func TestConformanceServerAsksTheClient(t *testing.T) {
	t.Parallel()
	bin := buildConformanceServer(t)
	pinned := manager.Spec{Transport: manager.TransportStdio, Command: []string{bin}, Protocol: manager.Protocol20260728}
	r := newRig(t, map[string]manager.Spec{
		"auto":   {Transport: manager.TransportStdio, Command: []string{bin}},
		"pinned": pinned,
	}, gateway.HTTPOptions{})

	t.Run("auto", func(t *testing.T) {
		st := r.wait("auto")
		assert.Equal(t, "2025-11-25", st.Protocol, "the negotiated protocol, in the status")
		var a askingClient
		cs := a.connect(t, r.streamable("/servers/auto/mcp"), map[string]any{"username": "ada"})
		require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion, "the client's generation")

		res := call(t, cs, "test_elicitation", map[string]any{"message": "Who are you?"})
		require.False(t, res.IsError, text(res))
		assert.Equal(t, "Elicitation result: action=accept, content=map[username:ada]", text(res))
		res = call(t, cs, "test_sampling", map[string]any{"prompt": "Capital of France?"})
		require.False(t, res.IsError, text(res))
		assert.Equal(t, "LLM response: Paris", text(res))

		elicited, sampled := a.asked()
		require.Len(t, elicited, 1)
		assert.Equal(t, "Who are you?", elicited[0].Message)
		require.Len(t, sampled, 1)
		assert.Equal(t, "Capital of France?", sampled[0].Messages[0].Content.(*mcp.TextContent).Text)
	})

	t.Run("auto, a 2026-07-28 client", func(t *testing.T) {
		r.wait("auto")
		var a askingClient
		cs := a.connect(t, r.stdio(t, "auto"), map[string]any{"username": "ada"})
		require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion, "the client's generation")

		res := call(t, cs, "test_elicitation", map[string]any{"message": "Who are you?"})
		require.False(t, res.IsError, text(res))
		assert.Equal(t, "Elicitation result: action=accept, content=map[username:ada]", text(res))
		elicited, _ := a.asked()
		require.Len(t, elicited, 1)
		assert.Equal(t, "Who are you?", elicited[0].Message)
	})

	t.Run("pinned to 2026-07-28", func(t *testing.T) {
		st := r.wait("pinned")
		assert.Equal(t, "2026-07-28", st.Protocol, "the negotiated protocol, in the status")
		var a askingClient
		cs := a.connect(t, r.streamable("/servers/pinned/mcp"), map[string]any{"name": "Ada"})

		res := call(t, cs, "test_elicitation", map[string]any{"message": "Who are you?"})
		require.True(t, res.IsError, text(res))
		assert.Contains(t, text(res), `"elicitation/create" cannot be sent while serving a request on protocol version 2026-07-28`)

		res = call(t, cs, "test_input_required_result_elicitation", map[string]any{})
		require.False(t, res.IsError, text(res))
		assert.Equal(t, "Hello, Ada!", text(res))
		elicited, _ := a.asked()
		require.Len(t, elicited, 1, "only the input request reached the client")
		assert.Equal(t, "What is your name?", elicited[0].Message)
	})
}

// With the fast path on, what a server asks during a call (a form, a
// completion) reaches the caller on the call's own response, and the call
// completes with the caller's answer, on both endpoints: whether or not
// the client holds a standalone stream open, as on the go-sdk path.
func TestFastPathCarriesTheServersQuestions(t *testing.T) {
	t.Parallel()
	bin := buildConformanceServer(t)
	r := newRigWith(t, map[string]manager.Spec{"auto": {Transport: manager.TransportStdio, Command: []string{bin}}},
		gateway.Options{FastPath: "on"}, gateway.HTTPOptions{})
	r.wait("auto")
	for _, ep := range []struct{ path, prefix string }{{"/servers/auto/mcp", ""}, {"/mcp", "auto__"}} {
		for _, standalone := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, standalone stream %v", ep.path, standalone), func(t *testing.T) {
				var a askingClient
				tr := &mcp.StreamableClientTransport{Endpoint: r.base + ep.path, MaxRetries: -1, DisableStandaloneSSE: !standalone}
				cs := a.connect(t, tr, map[string]any{"username": "ada"})
				require.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion)
				before := gateway.FastServed(r.gw)
				res := call(t, cs, ep.prefix+"test_elicitation", map[string]any{"message": "Who are you?"})
				require.False(t, res.IsError, text(res))
				assert.Equal(t, "Elicitation result: action=accept, content=map[username:ada]", text(res))
				res = call(t, cs, ep.prefix+"test_sampling", map[string]any{"prompt": "Capital of France?"})
				require.False(t, res.IsError, text(res))
				assert.Equal(t, "LLM response: Paris", text(res))
				require.EqualValues(t, 2, gateway.FastServed(r.gw)-before, "both calls took the fast path")

				elicited, sampled := a.asked()
				require.Len(t, elicited, 1)
				assert.Equal(t, "Who are you?", elicited[0].Message)
				require.Len(t, sampled, 1)
				assert.Equal(t, "Capital of France?", sampled[0].Messages[0].Content.(*mcp.TextContent).Text)
			})
		}
	}
}
