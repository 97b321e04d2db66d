package manager_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Health checks of sessions on 2026-07-28, where ping is gone:
// server/discover is sent in its place, with the same interval, timeout
// and consequences.

var discoverLine = regexp.MustCompile(`(?m)^server/discover id=\S+$`)

// awaitDiscoverHealth waits until server's health is judged by answered
// server/discover requests.
func awaitDiscoverHealth(t *testing.T, m *manager.Manager, server string) manager.Status {
	t.Helper()
	var st manager.Status
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		st, err = m.Status(server)
		require.NoError(c, err)
		assert.True(c, st.HealthByDiscover, "checked with server/discover")
		assert.Positive(c, st.LastPing, "a check was answered")
	}, patience, 10*ms)
	require.Equal(t, manager.StateConnected, st.State)
	require.True(t, st.Healthy)
	require.False(t, st.PingUnsupported, "ping is not sent on 2026-07-28")
	return st
}

// A stdio server on 2026-07-28 that answers ping with -32601 stays
// healthy: its health is checked with server/discover, whose latency is
// the status's LastPing, and no health_unsupported is published.
func TestStdioDiscoverHealthWherePingIsGone(t *testing.T) {
	f := faultManager(t, manager.Options{})
	record := filepath.Join(t.TempDir(), "record")
	spec := f.fakeIn(quick(map[string]any{"protocol": "2026-07-28", "timeouts": map[string]any{
		"connect": "5s", "request": "5s", "health_interval": "1s", "health_timeout": "900ms",
	}}), "--ping=unsupported", "--discover=ok", "--record="+record)
	require.NoError(t, f.m.Add("x", spec))
	f.until("x", events.KindConnected, patience)
	require.Equal(t, "2026-07-28", mustStatus(t, f.m, "x").Protocol)

	awaitDiscoverHealth(t, f.m, "x")
	// The handshake's and then one per check.
	awaitRecord(t, record, discoverLine, 3)
	f.echoOK("x.echo", "still here")
	evs := f.until("x", events.KindToolCall, patience)
	require.Empty(t, only(evs, events.KindHealthUnsupported), "server/discover is answered")
	require.Empty(t, only(evs, events.KindHealthFailed))
}

// The go-sdk's conformance everything-server over stdio, pinned to
// 2026-07-28, takes the server/discover mcpvisor sends itself (its
// per-request _meta) and is kept healthy by it.
func TestStdioDiscoverHealthConformanceServer(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "everything-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput()
	require.NoError(t, err, "building the conformance everything-server: %s", out)
	f := faultManager(t, manager.Options{})
	require.NoError(t, f.m.Add("conf", decode(t, quick(map[string]any{
		"command":  []any{bin},
		"protocol": "2026-07-28",
		"timeouts": map[string]any{"connect": "10s", "request": "5s", "health_interval": "1s", "health_timeout": "900ms"},
	}))))
	f.until("conf", events.KindConnected, patience)
	require.Equal(t, "2026-07-28", mustStatus(t, f.m, "conf").Protocol)
	awaitDiscoverHealth(t, f.m, "conf")
}

// A stdio server on 2026-07-28 without ping that stops answering
// server/discover is found out at the health timeout: the session ends
// saying so and the server is reconnected as a new process.
func TestStdioDiscoverHealthFailureReconnects(t *testing.T) {
	f := faultManager(t, manager.Options{})
	spec := f.fakeIn(quick(map[string]any{"protocol": "2026-07-28", "timeouts": map[string]any{
		"connect": "5s", "request": "5s", "health_interval": "1s", "health_timeout": "300ms",
	}}), "--ping=unsupported", "--discover=stall")
	require.NoError(t, f.m.Add("x", spec))
	f.until("x", events.KindConnected, patience)

	evs := lifecycle(f.until("x", events.KindConnected, patience))
	require.Equal(t, []events.Kind{events.KindHealthFailed, events.KindDisconnected, events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
	require.Equal(t, `server "x": server/discover: timeout after 300ms`, evs[0].Fields["error"])
	require.Equal(t, `server "x": session: health check failed: server/discover: timeout after 300ms`, evs[1].Fields["error"])
	require.Len(t, f.pids(spec), 2, "a new process")
}

// A server that answers neither ping nor server/discover is judged from
// its session, as one without ping was before: one health_unsupported
// naming both.
func TestStdioDiscoverHealthUnsupported(t *testing.T) {
	f := faultManager(t, manager.Options{})
	record := filepath.Join(t.TempDir(), "record")
	// It speaks 2026-07-28 only through the go-sdk's negotiation, which
	// needs server/discover; so the session is on 2025-11-25 here, and
	// server/discover is not tried on it.
	spec := f.fakeIn(quick(map[string]any{"timeouts": map[string]any{
		"connect": "5s", "request": "5s", "health_interval": "1s", "health_timeout": "900ms",
	}}), "--ping=unsupported", "--record="+record)
	require.NoError(t, f.m.Add("x", spec))
	evs := f.until("x", events.KindHealthUnsupported, patience)
	require.Equal(t, `server "x": ping: not supported (-32601); watching the session and request errors instead`, evs[len(evs)-1].Fields["error"])
	st := mustStatus(t, f.m, "x")
	require.True(t, st.PingUnsupported)
	require.False(t, st.HealthByDiscover)
	require.True(t, st.Healthy)
}

// sessionlessHTTP is a go-sdk server that keeps no session (so it speaks
// 2026-07-28) on loopback, whose ping answers -32601 and whose
// server/discover hangs while hang is set. discovers counts the
// server/discover requests and headers is the last one's header.
type sessionlessHTTP struct {
	url       string
	hang      atomic.Bool
	refuse    atomic.Bool // server/discover answers -32601
	discovers atomic.Int64
	headers   atomic.Pointer[http.Header]
	closing   chan struct{} // releases the hung handlers at the end
}

func newSessionlessHTTP(t *testing.T) *sessionlessHTTP {
	s := &sessionlessHTTP{closing: make(chan struct{})}
	srv := demo.NewServer()
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "ping":
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "ping is gone"}
			case "server/discover":
				s.discovers.Add(1)
				if s.refuse.Load() {
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no discover"}
				}
				if h := req.GetExtra(); h != nil && h.Header != nil {
					hdr := h.Header.Clone()
					s.headers.Store(&hdr)
				}
				if s.hang.Load() {
					// The handler's context outlives the POST that was
					// given up on: only the server's end releases it.
					select {
					case <-ctx.Done():
					case <-s.closing:
					}
					return nil, errors.New("hung")
				}
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(s.closing) }) // before ts.Close
	s.url = ts.URL
	return s
}

// Over streamable HTTP the same: server/discover is POSTed through the
// connection's client with the headers 2026-07-28 asks for, keeps the
// server healthy, and ends the session when it hangs.
func TestHTTPDiscoverHealth(t *testing.T) {
	srv := newSessionlessHTTP(t)
	m := newManager(t, manager.Options{Rand: constRand(0)})
	tl := watch(t, m)
	require.NoError(t, m.Add("web", decode(t, map[string]any{
		"url":      srv.url,
		"headers":  map[string]any{"X-Team": "blue"},
		"timeouts": map[string]any{"health_interval": "1s", "keepalive": "1s", "health_timeout": "300ms"},
		"backoff":  map[string]any{"initial": "10ms", "max": "10s"},
	})))
	tl.until("web", events.KindConnected, patience)
	require.Equal(t, "2026-07-28", mustStatus(t, m, "web").Protocol)

	handshake := srv.discovers.Load()
	awaitDiscoverHealth(t, m, "web")
	require.Greater(t, srv.discovers.Load(), handshake)
	hdr := *srv.headers.Load()
	require.Equal(t, "2026-07-28", hdr.Get("Mcp-Protocol-Version"))
	require.Equal(t, "server/discover", hdr.Get("Mcp-Method"))
	require.Equal(t, "blue", hdr.Get("X-Team"), "the connection's own headers")

	srv.hang.Store(true)
	evs := lifecycle(tl.until("web", events.KindDisconnected, patience))
	evs = only(evs, events.KindHealthFailed)
	require.NotEmpty(t, evs)
	require.Equal(t, `server "web": server/discover: timeout after 300ms`, evs[0].Fields["error"])
	srv.hang.Store(false)
	tl.until("web", events.KindConnected, patience)
}

// A server on 2026-07-28 that answers server/discover with -32601 after
// the handshake has no health check left: one health_unsupported naming
// server/discover, and it stays healthy, judged from its session.
func TestHTTPDiscoverHealthUnsupported(t *testing.T) {
	srv := newSessionlessHTTP(t)
	m := newManager(t, manager.Options{Rand: constRand(0)})
	tl := watch(t, m)
	require.NoError(t, m.Add("web", decode(t, map[string]any{
		"url":      srv.url,
		"timeouts": map[string]any{"health_interval": "1s", "keepalive": "1s", "health_timeout": "500ms"},
	})))
	tl.until("web", events.KindConnected, patience)
	require.True(t, mustStatus(t, m, "web").HealthByDiscover)
	srv.refuse.Store(true)

	evs := tl.until("web", events.KindHealthUnsupported, patience)
	require.Equal(t, `server "web": server/discover: not supported (-32601); watching the session and request errors instead`, evs[len(evs)-1].Fields["error"])
	st := mustStatus(t, m, "web")
	require.Equal(t, manager.StateConnected, st.State)
	require.True(t, st.Healthy)
	require.True(t, st.PingUnsupported, "no health check is answered")
	require.True(t, st.HealthByDiscover, "the check refused was server/discover")
}
