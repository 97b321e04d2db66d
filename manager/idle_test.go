package manager_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Idle: a session with no calls for the idle timeout is closed (pings do
// not count as activity); its tools stay listed and available, and the next
// call reconnects it transparently.
func TestIdleCloseAndReconnectOnDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("echo")
		p := f.serve()
		m := newManager(t, manager.Options{Dial: p.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)

		time.Sleep(time.Minute)
		_, err := m.Call(context.Background(), "x.echo", map[string]any{"text": "a"}, manager.CallOptions{})
		require.NoError(t, err)

		evs := lifecycle(tl.until("x", events.KindIdle, time.Hour))
		require.Equal(t, []events.Kind{events.KindIdle}, kinds(evs))
		require.Equal(t, 11*time.Minute, evs[0].At, "10 minutes after the last call, pings notwithstanding")
		require.Positive(t, f.count("ping"))
		st := mustStatus(t, m, "x")
		require.Equal(t, manager.StateIdle, st.State)
		tools := mustTools(t, m, "x")
		require.Len(t, tools, 1)
		require.True(t, tools[0].Available, "an idle server's tools stay callable")

		time.Sleep(time.Hour)
		require.Equal(t, 1, p.dialCount(), "idle servers are not reconnected until needed")
		res, err := m.Call(context.Background(), "x.echo", map[string]any{"text": "b"}, manager.CallOptions{})
		require.NoError(t, err)
		require.Equal(t, "echo:b", res.Content[0].(*mcp.TextContent).Text)
		require.Equal(t, 2, p.dialCount())
		evs = lifecycle(tl.until("x", events.KindConnected, time.Second))
		require.Equal(t, []events.Kind{events.KindConnecting, events.KindConnected}, kinds(evs))
	})
}

// Idle timeout vs a call in flight: the call keeps the session open past
// the idle timeout; it closes exactly the timeout after the call finished.
func TestIdleWaitsForCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				time.Sleep(time.Minute)
				return &mcp.CallToolResult{}, nil
			})
		m := newManager(t, manager.Options{Dial: f.serve().dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"timeouts": map[string]any{"idle": "30s", "request": "2m"}})))
		tl.until("x", events.KindConnected, time.Second)

		_, err := m.Call(context.Background(), "x.slow", nil, manager.CallOptions{})
		require.NoError(t, err, "not closed under the call")
		evs := lifecycle(tl.until("x", events.KindIdle, time.Hour))
		require.Equal(t, []events.Kind{events.KindIdle}, kinds(evs))
		require.Equal(t, 90*time.Second, evs[0].At, "30s after the call ended at 60s")
	})
}

// Waiting for an idle server to be connected wakes it, as a call does.
func TestWaitWakesIdleServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"timeouts": map[string]any{"idle": "1m"}})))
		tl.until("x", events.KindIdle, time.Hour)
		_, err := m.Wait(context.Background(), "x", manager.StateConnected)
		require.NoError(t, err)
		require.Equal(t, 2, p.dialCount())
	})
}

// idle = 0 disables the idle close.
func TestIdleDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		m := newManager(t, manager.Options{Dial: f.serve().dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"timeouts": map[string]any{"idle": 0}})))
		tl.until("x", events.KindConnected, time.Second)
		time.Sleep(24 * time.Hour)
		require.Empty(t, tl.quiet(time.Second))
		require.Equal(t, manager.StateConnected, mustStatus(t, m, "x").State)
	})
}
