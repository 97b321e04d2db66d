package manager_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// sessionlessOnly is the demo server refusing the initialize handshake,
// as a server that speaks only the sessionless generation does.
func sessionlessOnly() *mcp.Server {
	s := demo.NewServer()
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "initialize" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "initialize is not served: use server/discover"}
			}
			return next(ctx, method, req)
		}
	})
	return s
}

// By default a server that refuses the 2025-11-25 handshake is connected
// again at once, on 2026-07-28, within the same attempt: it works, and the
// status says which generation it speaks.
func TestAutoProtocolFallsBackForASessionlessServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{newServer: sessionlessOnly}
		m := newManager(t, manager.Options{Dial: p.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("new", fakeSpec(t, nil)))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := m.Wait(ctx, "new", manager.StateConnected)
		require.NoError(t, err)
		require.Equal(t, "2026-07-28", st.Protocol)
		require.Equal(t, 2, p.dialCount(), "the refused connection and the sessionless one")
		evs := lifecycle(tl.until("new", events.KindConnected, time.Second))
		require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindConnected}, kinds(evs), "one attempt, not failed")
		require.Equal(t, "2026-07-28", evs[2].Fields["protocol"])

		res, err := m.Call(ctx, "new.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
		require.NoError(t, err)
		require.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)

		// Once known, it is not offered initialize again: a reconnect
		// costs one connection, not two.
		require.NoError(t, m.Reconnect("new"))
		tl.until("new", events.KindDisconnected, time.Minute)
		tl.until("new", events.KindConnected, time.Minute)
		require.Equal(t, 3, p.dialCount(), "one more connection for the reconnect")
	})
}

// Pinned to 2025-11-25, the same server fails to connect, and the error
// says what was refused and what to set instead.
func TestPinnedProtocolIsNotFallenBackFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{newServer: sessionlessOnly}
		m := newManager(t, manager.Options{Dial: p.dial})
		require.NoError(t, m.Add("new", fakeSpec(t, map[string]any{"protocol": "2025-11-25", "max_retries": 0})))
		st, err := m.Wait(context.Background(), "new", manager.StateFailed)
		require.NoError(t, err)
		require.Equal(t, `gave up after 1 attempt: server "new": initialize: the server refused the 2025-11-25 handshake (protocol = "2025-11-25"; "auto" also tries 2026-07-28): calling "initialize": method not found: "initialize"`, st.LastError)
		require.Equal(t, 1, p.dialCount(), "no second connection")
	})
}

// Over streamable HTTP the go-sdk's negotiation stands: 2026-07-28 with a
// server that keeps no session (it can ask its client only through input
// requests), 2025-11-25 with one that keeps sessions. Pinned, a sessionless
// server is asked for 2025-11-25.
func TestAutoProtocolOverHTTP(t *testing.T) {
	for _, tt := range []struct {
		name      string
		stateless bool
		protocol  string
		want      string
	}{
		{"sessionless server", true, "", "2026-07-28"},
		{"server with sessions", false, "", "2025-11-25"},
		{"sessionless server, pinned", true, "2025-11-25", "2025-11-25"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := demo.NewServer()
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: tt.stateless})
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			m := newManager(t, manager.Options{})
			raw := map[string]any{"url": ts.URL}
			if tt.protocol != "" {
				raw["protocol"] = tt.protocol
			}
			require.NoError(t, m.Add("web", decode(t, raw)))
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			st, err := m.Wait(ctx, "web", manager.StateConnected)
			require.NoError(t, err)
			require.Equal(t, tt.want, st.Protocol)
		})
	}
}
