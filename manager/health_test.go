package manager_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A connected session is pinged every health_interval; a ping unanswered
// within health_timeout closes it and the server reconnects through the
// backoff schedule (a ping that hangs).
func TestHealthFailureReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("echo")
		m := newManager(t, manager.Options{Dial: f.serve().dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)

		time.Sleep(25 * time.Second)
		require.Equal(t, 2, f.count("ping"), "pings at 10s and 20s")
		st := mustStatus(t, m, "x")
		require.True(t, st.Healthy)
		require.Empty(t, tl.quiet(time.Millisecond), "answered pings publish nothing")

		f.setHang("ping", true)
		evs := tl.until("x", events.KindConnected, time.Minute)
		require.Equal(t, []events.Kind{events.KindHealthFailed, events.KindDisconnected, events.KindBackoff,
			events.KindConnecting, events.KindConnected}, kinds(evs))
		require.Equal(t, 35*time.Second, evs[0].At, "the ping sent at 30s times out at 35s")
		require.Equal(t, `server "x": ping: timeout after 5s`, evs[0].Fields["error"])
		require.Equal(t, `server "x": session: health check failed: ping: timeout after 5s`, evs[1].Fields["error"])
		require.EqualValues(t, 100, evs[2].Fields["delay_ms"])
		require.Equal(t, 35100*ms, evs[4].At)
	})
}

// A server that answers ping with -32601 is not unhealthy: one
// health_unsupported event, no more pings, and liveness is judged from the
// session — here the server timeout, as the server then sends nothing.
func TestPingUnsupported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("echo")
		f.fail["ping"] = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
		m := newManager(t, manager.Options{Dial: f.serve().dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"timeouts": map[string]any{"server": "2m", "idle": 0}})))
		tl.until("x", events.KindConnected, time.Second)

		evs := tl.until("x", events.KindHealthUnsupported, time.Minute)
		require.Len(t, evs, 1)
		require.Equal(t, 10*time.Second, evs[0].At)
		st := mustStatus(t, m, "x")
		require.Equal(t, manager.StateConnected, st.State)
		require.True(t, st.Healthy, "-32601 is not a failure")
		require.True(t, st.PingUnsupported)

		// A call is something heard from the server: silence counts from it.
		_, err := m.Call(context.Background(), "x.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
		require.NoError(t, err)
		require.Equal(t, events.KindToolCall, tl.next(time.Second).Kind)

		evs = tl.until("x", events.KindDisconnected, 10*time.Minute)
		require.Equal(t, []events.Kind{events.KindDisconnected}, kinds(evs), "no second health_unsupported")
		require.Equal(t, 10*time.Second+2*time.Minute, evs[0].At, "silent for 2m after the call")
		require.Equal(t, `server "x": session: nothing received from the server for 2m0s`, evs[0].Fields["error"])
		require.Equal(t, 1, f.count("ping"), "a server without ping is not pinged again")
	})
}

// Keepalive: HTTP sessions are pinged at least every keepalive (traffic
// through proxies), stdio ones only every health_interval.
func TestKeepaliveForHTTP(t *testing.T) {
	for _, tt := range []struct {
		name      string
		spec      map[string]any
		wantPings int
	}{
		{name: "http", spec: map[string]any{"url": "http://127.0.0.1:1/mcp", "timeouts": map[string]any{"keepalive": "4s"}}, wantPings: 5},
		{name: "stdio", spec: map[string]any{"command": []any{"x"}, "timeouts": map[string]any{"keepalive": "4s"}}, wantPings: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeServer(nil)
				m := newManager(t, manager.Options{Dial: f.serve().dial})
				require.NoError(t, m.Add("x", decode(t, tt.spec)))
				_, err := m.Wait(context.Background(), "x", manager.StateConnected)
				require.NoError(t, err)
				time.Sleep(21 * time.Second)
				require.Equal(t, tt.wantPings, f.count("ping"))
			})
		})
	}
}

// The ping's latency is published in the status.
func TestPingLatencyInStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "ping" {
					time.Sleep(40 * ms)
				}
				return next(ctx, method, req)
			}
		})
		m := newManager(t, manager.Options{Dial: f.serve().dial})
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "x", manager.StateConnected)
		require.NoError(t, err)
		time.Sleep(11 * time.Second)
		st := mustStatus(t, m, "x")
		require.Equal(t, 40*ms, st.LastPing)
		require.True(t, st.Healthy)
	})
}
