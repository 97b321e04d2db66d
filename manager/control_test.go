package manager_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// slowServer has a tool "slow" that takes d (fake time) and counts the
// cancellations it saw.
func slowServer(d time.Duration) *fakeServer {
	f := newFakeServer(nil)
	f.addTool(&mcp.Tool{Name: "slow", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(d):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	return f
}

// Disabling closes the session and keeps the server down (calls fail with
// SERVER_DISABLED, tools listed unavailable); enabling connects it again. A
// server declared enabled = false connects when enabled.
func TestDisableEnable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("echo")
		p := f.serve()
		m := newManager(t, manager.Options{Dial: p.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		require.NoError(t, m.Add("off", fakeSpec(t, map[string]any{"enabled": false})))
		tl.until("x", events.KindConnected, time.Second)

		require.NoError(t, m.Disable("x"))
		// The other server's "added" may come after x connected.
		evs := from("x", tl.until("x", events.KindDisabled, time.Second))
		require.Equal(t, []events.Kind{events.KindDisabled}, kinds(evs))
		require.Equal(t, manager.StateDisabled, mustStatus(t, m, "x").State)
		_, err := m.Call(context.Background(), "x.echo", map[string]any{"text": "a"}, manager.CallOptions{})
		requireCode(t, err, manager.ErrServerDisabled, "x", `tools/call "echo"`)
		requireRemedy(t, err, manager.RemedyEnable, "x")
		require.Equal(t, manager.Remedy{Kind: manager.RemedyEnable, Server: "x"}, mustStatus(t, m, "x").Remedy)
		require.False(t, mustTools(t, m, "x")[0].Available)
		require.NoError(t, m.Disable("x"), "disabling twice is harmless")
		time.Sleep(time.Hour)
		require.Equal(t, 1, p.dialCount(), "a disabled server is never connected")

		require.NoError(t, m.Enable("x"))
		_, err = m.Wait(context.Background(), "x", manager.StateConnected)
		require.NoError(t, err)
		require.Equal(t, 2, p.dialCount())

		require.Equal(t, manager.StateDisabled, mustStatus(t, m, "off").State)
		require.NoError(t, m.Enable("off"))
		_, err = m.Wait(context.Background(), "off", manager.StateConnected)
		require.NoError(t, err)

		err = m.Reconnect("nope")
		requireCode(t, err, manager.ErrServerNotFound, "nope", "reconnect")
	})
}

// mcp_reconnect on a connected server replaces its session.
func TestReconnectConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)
		require.NoError(t, m.Reconnect("x"))
		evs := tl.until("x", events.KindConnected, time.Second)
		require.Equal(t, []events.Kind{events.KindDisconnected, events.KindConnecting, events.KindConnected}, kinds(evs))
		require.Equal(t, `server "x": session: closed: reconnect requested`, evs[0].Fields["error"])
		require.Equal(t, 2, p.dialCount())
		met, err := m.Metrics("x")
		require.NoError(t, err)
		require.EqualValues(t, 1, met.Reconnects)
	})
}

// Reconnect returns at once, but what follows it sees its effect: a Wait
// for connected and a call made after it get the new session, not the old
// one about to be closed under them.
func TestWaitAndCallAfterReconnectUseTheNewSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("echo")
		p := f.serve()
		m := newManager(t, manager.Options{Dial: p.dial})
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		st1, err := m.Wait(t.Context(), "x", manager.StateConnected)
		require.NoError(t, err)
		time.Sleep(time.Second)

		require.NoError(t, m.Reconnect("x"))
		st2, err := m.Wait(t.Context(), "x", manager.StateConnected)
		require.NoError(t, err)
		require.True(t, st2.ConnectedAt.After(st1.ConnectedAt), "Wait returned the session Reconnect replaces (connected at %v, was %v)", st2.ConnectedAt, st1.ConnectedAt)

		time.Sleep(time.Second)
		require.NoError(t, m.Reconnect("x"))
		_, err = m.Call(t.Context(), "x.echo", map[string]any{"text": "a"}, manager.CallOptions{})
		require.NoError(t, err, "a call made after Reconnect runs on the new session")
		require.Equal(t, 3, p.dialCount())
	})
}

// A Reconnect made while an attempt is under way (a login that lands while
// the server is connecting, say) is served by a session after it: Wait for
// connected does not return the session of that attempt, which is replaced
// as soon as it is up, but the one that replaces it, and that one stays.
func TestWaitAfterReconnectDuringAnAttemptKeepsItsSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The supervisor takes a second over its first session, as a busy
		// machine may: a waiter has the time to see it.
		var first atomic.Bool
		manager.SetServeHook(func(server string) {
			if server == "mid-attempt" && first.CompareAndSwap(false, true) {
				time.Sleep(time.Second)
			}
		})
		t.Cleanup(func() { manager.SetServeHook(nil) })
		p := &peers{delay: time.Second}
		m := newManager(t, manager.Options{Dial: p.dial})
		require.NoError(t, m.Add("mid-attempt", fakeSpec(t, nil)))
		time.Sleep(time.Second / 2) // the first attempt is dialling

		require.NoError(t, m.Reconnect("mid-attempt"))
		st, err := m.Wait(t.Context(), "mid-attempt", manager.StateConnected)
		require.NoError(t, err)
		time.Sleep(time.Minute)
		now := mustStatus(t, m, "mid-attempt")
		require.Equal(t, manager.StateConnected, now.State)
		require.Equal(t, st.ConnectedAt, now.ConnectedAt, "Wait returned a session that was replaced right after")
		require.Equal(t, 2, p.dialCount(), "one attempt for the Reconnect, after the one under way")
	})
}

// Dispose with calls in flight: removal refuses new requests at once
// (CLOSED), lets the ones in flight finish, and publishes removed only
// after them.
func TestRemoveDrainsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := slowServer(5 * time.Second)
		m := newManager(t, manager.Options{Dial: f.serve().dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)

		var wg sync.WaitGroup
		var res *mcp.CallToolResult
		var callErr error
		wg.Go(func() { res, callErr = m.Call(context.Background(), "x.slow", nil, manager.CallOptions{}) })
		time.Sleep(time.Second)
		done, err := m.Remove("x")
		require.NoError(t, err)
		evs := tl.until("x", events.KindClosing, time.Second)
		require.Equal(t, time.Second, evs[len(evs)-1].At)
		_, err = m.Call(context.Background(), "x.slow", nil, manager.CallOptions{})
		requireCode(t, err, manager.ErrClosed, "x", `tools/call "slow"`)
		require.Equal(t, time.Second, time.Since(tl.start), "a new call is refused at once, not after the drain")

		<-done
		wg.Wait()
		require.NoError(t, callErr, "the call in flight finishes")
		require.Equal(t, "done", res.Content[0].(*mcp.TextContent).Text)
		evs = lifecycle(tl.until("x", events.KindRemoved, time.Second))
		require.Equal(t, 5*time.Second, evs[len(evs)-1].At, "removed after the call finished")
	})
}

// A drain is bounded: past Options.DrainTimeout the calls still in flight
// are abandoned (the server sees notifications/cancelled) and fail saying
// so.
func TestRemoveAbandonsCallsPastTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := slowServer(time.Hour)
		m := newManager(t, manager.Options{Dial: f.serve().dial, DrainTimeout: 2 * time.Second})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"timeouts": map[string]any{"request": "2h"}})))
		tl.until("x", events.KindConnected, time.Second)

		start := time.Now()
		callErr := make(chan error, 1)
		go func() {
			_, err := m.Call(context.Background(), "x.slow", nil, manager.CallOptions{})
			callErr <- err
		}()
		synctest.Wait()
		done, err := m.Remove("x")
		require.NoError(t, err)

		// New requests are refused at once while it drains.
		_, err = m.Status("x")
		requireCode(t, err, manager.ErrServerNotFound, "x", "status")

		<-done
		require.Equal(t, 2*time.Second, time.Since(start))
		err = <-callErr
		requireCode(t, err, manager.ErrInvocationFailed, "x", `tools/call "slow"`)
		require.ErrorIs(t, err, manager.ErrDisconnected)
		require.Contains(t, err.Error(), "the server was closed while the request ran")
	})
}

// Close waits for the servers removed before it that are still draining:
// when it returns, their calls are finished and their disposal is done,
// as for the servers it removes itself.
func TestCloseWaitsForServersStillLeaving(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := slowServer(5 * time.Second)
		m := manager.New(manager.Options{Dial: f.serve().dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)

		start := time.Now()
		callErr := make(chan error, 1)
		go func() {
			_, err := m.Call(context.Background(), "x.slow", nil, manager.CallOptions{})
			callErr <- err
		}()
		synctest.Wait()
		done, err := m.Remove("x")
		require.NoError(t, err)
		require.NoError(t, m.Close(context.Background()))
		select {
		case <-done:
		default:
			t.Fatal("Close returned while a removed server was still draining")
		}
		require.Equal(t, 5*time.Second, time.Since(start), "after the call in flight")
		require.NoError(t, <-callErr)
	})
}

// Per-server counters and pool totals.
func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("echo")
		f.addTool(&mcp.Tool{Name: "bad", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				time.Sleep(100 * ms)
				return &mcp.CallToolResult{IsError: true}, nil
			})
		f.addTool(&mcp.Tool{Name: "hang", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		m := newManager(t, manager.Options{Dial: f.serve().dial})
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "x", manager.StateConnected)
		require.NoError(t, err)

		ctx := context.Background()
		_, err = m.Call(ctx, "x.echo", map[string]any{"text": "a"}, manager.CallOptions{})
		require.NoError(t, err)
		_, err = m.Call(ctx, "x.bad", nil, manager.CallOptions{})
		require.NoError(t, err)
		_, err = m.Call(ctx, "x.hang", nil, manager.CallOptions{Timeout: time.Second})
		require.ErrorIs(t, err, manager.ErrTimeout)
		_, err = m.Call(ctx, "x.echo", map[string]any{}, manager.CallOptions{})
		requireCode(t, err, manager.ErrInvalidArguments, "x", `tools/call "echo"`)
		// Cancelled by its caller after 5s (Ctrl-C): counted as such, and
		// kept out of the latency, which it would have tripled.
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(5*time.Second, cancel)
		_, err = m.Call(cctx, "x.hang", nil, manager.CallOptions{})
		require.ErrorIs(t, err, manager.ErrCancelled)
		require.NotErrorIs(t, err, manager.ErrTimeout)

		time.Sleep(time.Minute)
		met, err := m.Metrics("x")
		require.NoError(t, err)
		require.Equal(t, uint64(4), met.Requests, "the rejected call never reached the server")
		require.Equal(t, manager.ErrorCounts{Timeout: 1, Tool: 1, Cancelled: 1}, met.Errors)
		require.Equal(t, uint64(2), met.Errors.Total(), "a cancelled call is no failure")
		// EMA: 0 → 0 + 0.2·(100ms − 0) = 20ms → 20ms + 0.2·(1s − 20ms) = 216ms.
		require.Equal(t, 216*ms, met.Latency)
		require.Equal(t, time.Minute+6100*ms, met.ConnectedFor)
		require.Equal(t, manager.StateConnected, met.State)

		pool := m.PoolMetrics()
		require.Equal(t, 1, pool.Servers)
		require.Equal(t, map[manager.State]int{manager.StateConnected: 1}, pool.ByState)
		require.Equal(t, uint64(4), pool.Requests)
		require.Equal(t, met.Errors, pool.Errors)
	})
}

// A disable whose drain runs out abandons the calls in flight then, and
// only those: once enabled again, the server's calls work.
func TestDisableDrainRunsOutThenEnable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := slowServer(time.Hour)
		f.addEcho("echo")
		m := newManager(t, manager.Options{Dial: f.serve().dial, DrainTimeout: time.Second})
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"timeouts": map[string]any{"request": "2h"}})))
		_, err := m.Wait(context.Background(), "x", manager.StateConnected)
		require.NoError(t, err)

		slow := make(chan error, 1)
		go func() {
			_, err := m.Call(context.Background(), "x.slow", nil, manager.CallOptions{})
			slow <- err
		}()
		synctest.Wait()
		require.NoError(t, m.Disable("x"))
		err = <-slow
		requireCode(t, err, manager.ErrInvocationFailed, "x", `tools/call "slow"`)
		require.ErrorIs(t, err, manager.ErrDisconnected)

		require.NoError(t, m.Enable("x"))
		_, err = m.Wait(context.Background(), "x", manager.StateConnected)
		require.NoError(t, err)
		res, err := m.Call(context.Background(), "x.echo", map[string]any{"text": "again"}, manager.CallOptions{})
		require.NoError(t, err, "a call after the enable is not abandoned")
		require.Equal(t, "echo:again", res.Content[0].(*mcp.TextContent).Text)
	})
}

// A tool_call event gives the call's duration in milliseconds with
// microsecond precision: most local calls take under a millisecond.
func TestToolCallEventDuration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := slowServer(1500 * time.Microsecond)
		m := newManager(t, manager.Options{Dial: f.serve().dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)
		_, err := m.Call(context.Background(), "x.slow", nil, manager.CallOptions{})
		require.NoError(t, err)
		evs := only(tl.until("x", events.KindToolCall, time.Second), events.KindToolCall)
		require.Equal(t, 1.5, evs[0].Fields["duration_ms"])
	})
}
