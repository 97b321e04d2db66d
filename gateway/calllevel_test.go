package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// heard is what a client's log handler was sent, in order.
type heard struct {
	mu   sync.Mutex
	msgs []string // guarded by mu: "level data"
}

func (h *heard) handler(_ context.Context, req *mcp.LoggingMessageRequest) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.msgs = append(h.msgs, fmt.Sprint(req.Params.Level, " ", req.Params.Data))
}

func (h *heard) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.msgs)
}

// A client of 2026-07-28 names in each call's _meta the level of log
// messages it wants. Asking for more than servers are asked for by
// default (debug), it hears on its very first call what the server logs
// at debug during the call, before the call's result: the server is
// asked for debug, and has answered, before the call is sent. A client
// of 2025-11-25 at info on the same endpoint hears that call's info
// messages but not its debug one.
//
// The server is one mcpvisor speaks 2025-11-25 to, where the level is the
// session's, or one it speaks 2026-07-28 to, where each call's _meta
// names it: over stdio, or over streamable HTTP, where the messages come
// on the call's response stream.
func TestCallLevelInMetaIsAskedOfTheServerFirst(t *testing.T) {
	t.Parallel()
	t.Run("server on 2025-11-25", func(t *testing.T) {
		t.Parallel()
		callLevelFirst(t, featuresRig(t), "2025-11-25")
	})
	t.Run("server on 2026-07-28", func(t *testing.T) {
		t.Parallel()
		spec := selfServer(t, "features-new", nil)
		spec.Protocol = manager.Protocol20260728
		r := newRig(t, map[string]manager.Spec{"feat": spec}, gateway.HTTPOptions{})
		r.gw.SetToolsets(map[string]gateway.Toolset{"feats": {Include: []string{"feat.*"}}})
		callLevelFirst(t, r, "2026-07-28")
	})
	t.Run("server on 2026-07-28 over streamable HTTP", func(t *testing.T) {
		t.Parallel()
		// Stateless: each call is answered on a stream of its own, the
		// go-sdk client's reading of which the manager counts the
		// messages on before it returns the call's result.
		srv := featuresServer()
		hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
			&mcp.StreamableHTTPOptions{Stateless: true}))
		t.Cleanup(hs.Close) // after the rig's, which ends the manager's streams
		spec := manager.Spec{Transport: manager.TransportHTTP, URL: hs.URL, Protocol: manager.Protocol20260728}
		r := newRig(t, map[string]manager.Spec{"feat": spec}, gateway.HTTPOptions{})
		r.gw.SetToolsets(map[string]gateway.Toolset{"feats": {Include: []string{"feat.*"}}})
		callLevelFirst(t, r, "2026-07-28")
	})
}

// callLevelFirst is TestCallLevelInMetaIsAskedOfTheServerFirst on r,
// whose server feat mcpvisor speaks protocol to.
func callLevelFirst(t *testing.T, r *rig, protocol string) {
	require.Equal(t, protocol, r.wait("feat").Protocol)
	for _, tc := range []struct{ path, tool string }{
		{"/mcp", "feat__chatty"},
		{"/servers/feat/mcp", "chatty"},
		{"/toolsets/feats/mcp", "feat__chatty"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var quietHeard heard
			quiet, err := mcp.NewClient(&mcp.Implementation{Name: "quiet", Version: "1"},
				&mcp.ClientOptions{LoggingMessageHandler: quietHeard.handler}).
				Connect(ctx, r.streamable(tc.path), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			require.NoError(t, err)
			defer quiet.Close()
			require.NoError(t, quiet.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))

			var w wire // the go-sdk client hands log messages on after its result: the wire tells their order
			verbose, err := mcp.NewClient(&mcp.Implementation{Name: "verbose", Version: "1"},
				&mcp.ClientOptions{LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) {}}).
				Connect(ctx, tappedHTTP(r.base+tc.path, &w), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			require.NoError(t, err)
			defer verbose.Close()
			require.Equal(t, "2026-07-28", verbose.InitializeResult().ProtocolVersion)

			mark := w.mark()
			res, err := verbose.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{},
				Meta: mcp.Meta{mcp.MetaKeyLogLevel: "debug"}})
			require.NoError(t, err)
			require.Equal(t, "done", text(res))
			require.Equal(t, []string{"log debug  details", "log info  starting", "log info  working", "log info  finishing"}, w.since(mark, "feat"),
				"what the server logged at debug and above, before the result")

			all := []string{"debug details", "info starting", "info working", "info finishing"}

			require.Eventually(t, func() bool { return slices.Contains(quietHeard.all(), "info finishing") }, 10*time.Second, 5*time.Millisecond,
				"the client at info hears the call's info messages")
			require.Equal(t, all[1:], quietHeard.all(), "a client at info hears no debug")
		})
	}
}
