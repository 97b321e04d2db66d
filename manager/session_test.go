package manager_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
	"github.com/mcpvisor/mcpvisor/manager"
)

// expiringServer serves a streamable HTTP MCP server on loopback whose
// sessions expire after a number of requests: from then on the session's
// requests get 404, as from a server that restarted and forgot it.
type expiringServer struct {
	url      string
	toolRun  atomic.Int32 // tool calls that reached the tool
	rawCalls atomic.Int32 // tools/call POSTs whose id is the raw path's

	mu sync.Mutex
	// mu guards the following.
	after    int            // requests a session may make; 0 = forever
	requests map[string]int // by session id
	news     int            // POSTs without a session id (handshakes)
}

func newExpiringServer(t *testing.T, after int) *expiringServer {
	t.Helper()
	e := &expiringServer{after: after, requests: make(map[string]int)}
	srv := mcp.NewServer(&mcp.Implementation{Name: "expiring", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			e.toolRun.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("Mcp-Session-Id")
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"method":"tools/call"`)) && bytes.Contains(body, []byte(`"id":"`+rawrpc.IDPrefix)) {
				e.rawCalls.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if id != "" && r.Method == http.MethodPost {
			e.mu.Lock()
			e.requests[id]++
			expired := e.after > 0 && e.requests[id] > e.after
			e.mu.Unlock()
			if expired {
				// Forget it for real, as a restarted server has.
				forget := httptest.NewRequestWithContext(r.Context(), http.MethodDelete, r.URL.String(), nil)
				forget.Header.Set("Mcp-Session-Id", id)
				forget.Host = r.Host
				h.ServeHTTP(httptest.NewRecorder(), forget)
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
		}
		if id == "" && r.Method == http.MethodPost {
			e.mu.Lock()
			e.news++
			e.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

// sessions counts the POSTs made without a session id: those of handshakes.
func (e *expiringServer) sessions() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.news
}

func (e *expiringServer) setAfter(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.after = n
}

// When the server forgets the HTTP session, the call that found out fails
// saying it may not have run (it is never re-sent), the host starts one new
// session at once (session_reinitialized, no backoff), and the next call
// works; a raw call (Manager.CallRaw) as Call.
func TestSessionExpiryReinitializesOnce(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw %v", raw), func(t *testing.T) { sessionExpiryReinitializesOnce(t, raw) })
	}
}

func sessionExpiryReinitializesOnce(t *testing.T, raw bool) {
	e := newExpiringServer(t, 6)
	m := newManager(t, manager.Options{})
	tl := watch(t, m)
	require.NoError(t, m.Add("web", decode(t, map[string]any{"url": e.url,
		"timeouts": map[string]any{"idle": 0, "health_interval": "1h", "health_timeout": "1s"}})))
	tl.until("web", events.KindConnected, 10*time.Second)
	handshake := e.sessions() // POSTs without a session id per handshake

	ctx := context.Background()
	call := func() error {
		opts := manager.CallOptions{Timeout: 5 * time.Second}
		if raw {
			_, err := m.CallRaw(ctx, "web", "echo", nil, nil, opts)
			return err
		}
		_, err := m.Call(ctx, "web.echo", nil, opts)
		return err
	}
	var failed error
	for i := 0; i < 10 && failed == nil; i++ {
		failed = call()
	}
	require.Error(t, failed, "the session expired after 6 requests")
	requireCode(t, failed, manager.ErrInvocationFailed, "web", `tools/call "echo"`)
	require.ErrorIs(t, failed, mcp.ErrSessionMissing)
	require.Contains(t, failed.Error(), "may not have run")
	ran := e.toolRun.Load()

	evs := lifecycle(tl.until("web", events.KindSessionReinitialized, 10*time.Second))
	require.Equal(t, []events.Kind{events.KindDisconnected, events.KindConnecting, events.KindConnected,
		events.KindSessionReinitialized}, kinds(evs), "a new session at once, without backoff")
	require.Equal(t, 2*handshake, e.sessions(), "exactly one new handshake")

	require.NoError(t, call())
	require.Equal(t, ran+1, e.toolRun.Load(), "the failed call was not re-sent behind our back")
	if raw {
		require.EqualValues(t, ran+2, e.rawCalls.Load(), "every call went on the raw path, the failed one too")
	}
}

// A server that forgets every new session at once is not re-initialized in
// a loop: the second consecutive expiry is a failure that backs off like
// any other.
func TestSessionExpiryTwiceBacksOff(t *testing.T) {
	e := newExpiringServer(t, 4)
	m := newManager(t, manager.Options{})
	tl := watch(t, m)
	require.NoError(t, m.Add("web", decode(t, map[string]any{"url": e.url,
		"backoff":  map[string]any{"initial": "10ms", "max": "20ms"},
		"timeouts": map[string]any{"idle": 0, "health_interval": "1h", "health_timeout": "1s"}})))
	tl.until("web", events.KindConnected, 10*time.Second)

	ctx := context.Background()
	for i := 0; i < 10; i++ {
		if _, err := m.Call(ctx, "web.echo", nil, manager.CallOptions{Timeout: 5 * time.Second}); err != nil {
			break
		}
	}
	tl.until("web", events.KindSessionReinitialized, 10*time.Second)
	e.setAfter(1) // the new session expires at its first call
	_, err := m.Call(ctx, "web.echo", nil, manager.CallOptions{Timeout: 5 * time.Second})
	require.ErrorIs(t, err, mcp.ErrSessionMissing)
	evs := lifecycle(tl.until("web", events.KindBackoff, 10*time.Second))
	require.Equal(t, []events.Kind{events.KindDisconnected, events.KindBackoff}, kinds(evs), "no second re-initialization")
	e.setAfter(0)
	_, err = m.Wait(ctx, "web", manager.StateConnected)
	require.NoError(t, err)
}

// Under a connection cap, the new session that replaces an expired one
// keeps the old one's slot: a server waiting in line does not get it.
func TestSessionExpiryKeepsItsSlot(t *testing.T) {
	e := newExpiringServer(t, 6)
	m := newManager(t, manager.Options{MaxConnections: 1})
	tl := watch(t, m)
	timeouts := map[string]any{"idle": 0, "health_interval": "1h", "health_timeout": "1s"}
	require.NoError(t, m.Add("web", decode(t, map[string]any{"url": e.url, "timeouts": timeouts})))
	require.NoError(t, m.Add("other", decode(t, map[string]any{"url": e.url, "timeouts": timeouts})))
	tl.until("web", events.KindConnected, 10*time.Second)
	handshake := e.sessions()

	for range 10 {
		if _, err := m.Call(context.Background(), "web.echo", nil, manager.CallOptions{Timeout: 5 * time.Second}); err != nil {
			require.ErrorIs(t, err, mcp.ErrSessionMissing)
			break
		}
	}
	tl.until("web", events.KindSessionReinitialized, 10*time.Second)
	require.Equal(t, 2*handshake, e.sessions(), "web's new session, and none for other")
	st := mustStatus(t, m, "other")
	require.Equal(t, manager.StateConnecting, st.State)
	require.Equal(t, "max connections (1) reached", st.Waiting)
}
