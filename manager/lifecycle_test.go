package manager_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Callers never connect (single-flight with mixed deadlines). Two calls
// arrive while a 2s connect is in progress; the one with a 100ms budget
// gets its own CONNECTION_TIMEOUT at exactly 100ms (the attempt goes on),
// the other is served at exactly 2s, and there was exactly one dial.
func TestCallsWaitForTheSingleConnectAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{delay: 2 * time.Second}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		start := time.Now()

		var wg sync.WaitGroup
		var errA, errB error
		var atA, atB time.Duration
		var resB *mcp.CallToolResult
		wg.Go(func() {
			_, errA = m.Call(context.Background(), "x.echo", map[string]any{"text": "a"}, manager.CallOptions{Timeout: 100 * ms})
			atA = time.Since(start)
		})
		wg.Go(func() {
			resB, errB = m.Call(context.Background(), "x.echo", map[string]any{"text": "b"}, manager.CallOptions{Timeout: 10 * time.Second})
			atB = time.Since(start)
		})
		wg.Wait()

		require.Equal(t, 100*ms, atA, "A returns at its own deadline")
		requireCode(t, errA, manager.ErrConnectionTimeout, "x", `tools/call "echo"`)
		require.ErrorIs(t, errA, manager.ErrTimeout)
		require.EqualError(t, errA, `server "x": tools/call "echo": still connecting: timeout after 100ms`)

		require.NoError(t, errB)
		require.Equal(t, 2*time.Second, atB, "B is served as soon as the single attempt connects")
		require.Equal(t, "b", resB.Content[0].(*mcp.TextContent).Text)

		require.Equal(t, 1, p.dialCount(), "A's timeout must neither cancel nor restart the attempt")
		evs := lifecycle(tl.until("x", events.KindConnected, time.Second))
		require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindConnected}, kinds(evs))
		require.Equal(t, 2*time.Second, evs[2].At)
	})
}

// A lost session is reported and repaired: disconnected, backoff,
// connecting, connected, in that order, with the tools marked unavailable
// meanwhile and the status telling why.
func TestSessionLossReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		tl.until("demo", events.KindConnected, time.Second)

		tools, err := m.Tools("demo")
		require.NoError(t, err)
		require.Len(t, tools, 4)
		for _, tool := range tools {
			require.True(t, tool.Available, "%s while connected", tool.FullName)
		}

		time.Sleep(10 * time.Second) // fake time: a session that has proven itself
		p.drop(t)
		evs := tl.until("demo", events.KindBackoff, time.Second)
		require.Equal(t, []events.Kind{events.KindDisconnected, events.KindBackoff}, kinds(evs))
		require.NotEmpty(t, evs[0].Fields["error"], "disconnected says why")
		require.EqualValues(t, 1, evs[1].Fields["attempt"])
		require.EqualValues(t, 100, evs[1].Fields["delay_ms"], "a session that stayed up resets the schedule")

		st := mustStatus(t, m, "demo")
		require.Equal(t, manager.StateBackoff, st.State)
		require.Equal(t, 1, st.Attempts)
		require.Equal(t, evs[0].Fields["error"], st.LastError)
		require.Equal(t, 4, st.Tools, "the last known tools stay counted")
		require.Equal(t, time.Now().Add(100*ms), st.NextAttempt)

		tools, err = m.Tools("")
		require.NoError(t, err)
		require.Len(t, tools, 4, "tools stay listed while the server backs off")
		for _, tool := range tools {
			require.False(t, tool.Available, "%s while in backoff", tool.FullName)
		}

		evs = tl.until("demo", events.KindConnected, time.Second)
		require.Equal(t, []events.Kind{events.KindConnecting, events.KindConnected}, kinds(evs))
		require.EqualValues(t, 2, evs[0].Fields["attempt"])
		require.Equal(t, 2, p.dialCount())

		st = mustStatus(t, m, "demo")
		require.Equal(t, manager.StateConnected, st.State)
		require.Empty(t, st.LastError, "cleared by the successful connect")
		res, err := m.Call(context.Background(), "demo.echo", map[string]any{"text": "again"}, manager.CallOptions{})
		require.NoError(t, err, "the new session serves calls")
		require.Equal(t, "again", res.Content[0].(*mcp.TextContent).Text)
	})
}

// A crash loop: a server that dies soon after each connect keeps growing
// its delays (the failure count is not reset by a bare handshake); one that
// stayed up at least backoff.max has proven itself and starts over.
func TestCrashLoopKeepsBackingOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil))) // backoff.max is 3s

		delayAfterUptime := func(up time.Duration) int64 {
			t.Helper()
			tl.until("x", events.KindConnected, time.Hour)
			time.Sleep(up)
			p.drop(t)
			evs := tl.until("x", events.KindBackoff, time.Second)
			return evs[len(evs)-1].Fields["delay_ms"].(int64)
		}
		// A session lost before backoff.max waits one step further on the
		// schedule than a failed attempt would; one up for backoff.max
		// proved itself and starts the schedule over.
		require.EqualValues(t, 200, delayAfterUptime(time.Second))
		require.EqualValues(t, 400, delayAfterUptime(time.Second), "crash loop: no reset after 1s up")
		require.EqualValues(t, 800, delayAfterUptime(2999*ms), "still short of backoff.max")
		require.EqualValues(t, 100, delayAfterUptime(3*time.Second), "up for backoff.max: reset")
	})
}

// Removing a server that is waiting out a long backoff returns at once and
// its removed event does not wait for the timer.
func TestRemoveDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: failingDial(errors.New("refused")), Rand: constRand(0)})
		tl := watch(t, m)
		spec := fakeSpec(t, map[string]any{"backoff": map[string]any{"initial": "1h", "max": "1h"}})
		require.NoError(t, m.Add("x", spec))
		evs := tl.until("x", events.KindBackoff, time.Second)
		backoffAt := evs[len(evs)-1].At

		// A caller waiting for the server to come back is released too.
		callErr := make(chan error, 1)
		go func() {
			_, err := m.Call(context.Background(), "x.echo", nil, manager.CallOptions{Timeout: 24 * time.Hour})
			callErr <- err
		}()
		synctest.Wait()

		done, err := m.Remove("x")
		require.NoError(t, err)
		<-done
		require.Equal(t, backoffAt, time.Since(tl.start), "disposal must not wait for the backoff timer")
		requireCode(t, <-callErr, manager.ErrClosed, "x", `tools/call "echo"`)
		require.Equal(t, backoffAt, time.Since(tl.start), "the waiting call is refused at once")
		evs = lifecycle(tl.until("x", events.KindRemoved, time.Second))
		require.Equal(t, []events.Kind{events.KindClosing, events.KindRemoved}, kinds(evs))
		require.Equal(t, "removed", evs[0].Fields["reason"])
		require.Equal(t, backoffAt, evs[1].At)

		_, err = m.Status("x")
		requireCode(t, err, manager.ErrServerNotFound, "x", "status")
		require.Empty(t, m.Names())
	})
}

// Removing a connected server closes its session (the peer sees it end),
// and Wait on a removed server reports CLOSED rather than hanging.
func TestRemoveConnectedServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "x", manager.StateConnected)
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		waitErr := make(chan error, 1)
		go func() {
			_, err := m.Wait(ctx, "x", manager.StateFailed)
			waitErr <- err
		}()
		synctest.Wait()

		done, err := m.Remove("x")
		require.NoError(t, err)
		<-done
		p.mu.Lock()
		ss := p.sessions[0]
		p.mu.Unlock()
		_ = ss.Wait() // returns (EOF or closed pipe) because the host hung up; a hang is a bubble deadlock
		requireCode(t, <-waitErr, manager.ErrClosed, "x", "wait")

		evs := tl.until("x", events.KindRemoved, time.Second)
		require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindConnected}, kinds(evs[:3]))
		require.NotContains(t, kinds(evs), events.KindDisconnected, "a removal is not a lost connection")
		require.NotContains(t, kinds(evs), events.KindBackoff, "nor a reason to reconnect")
	})
}

// The status snapshot of a server that failed once, then connected.
func TestStatusSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		var calls int
		dial := func(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
			if calls++; calls == 1 {
				return nil, errors.New("not yet")
			}
			return p.dial(ctx, name, spec)
		}
		m := newManager(t, manager.Options{Dial: dial, Rand: constRand(0)})
		tl := watch(t, m)
		start := time.Now()
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		st := mustStatus(t, m, "demo")
		require.Equal(t, manager.TransportStdio, st.Transport)
		require.Equal(t, "fake-server", st.Endpoint)

		tl.until("demo", events.KindBackoff, time.Second)
		st = mustStatus(t, m, "demo")
		require.Equal(t, manager.StateBackoff, st.State)
		require.Equal(t, 1, st.Attempts)
		require.Equal(t, `server "demo": spawn: not yet`, st.LastError)
		require.Equal(t, start.Add(100*ms), st.NextAttempt)

		evs := tl.until("demo", events.KindConnected, time.Second)
		connected := evs[len(evs)-1]
		st = mustStatus(t, m, "demo")
		require.Equal(t, "A demo server built into mcpvisor. Read "+demo.ReadmeURI+" for an overview.", st.Instructions)
		require.NotNil(t, st.Capabilities)
		require.NotNil(t, st.Capabilities.Prompts, "the server's own capabilities")
		st.Instructions, st.Capabilities = "", nil // shared with the session, compared above
		want := manager.Status{
			Name:          "demo",
			Transport:     manager.TransportStdio,
			Endpoint:      "fake-server",
			State:         manager.StateConnected,
			Since:         start.Add(100 * ms),
			ConnectedAt:   start.Add(100 * ms),
			DiscoveredAt:  start.Add(100 * ms),
			Tools:         4,
			Resources:     1, // demo://readme
			Prompts:       1, // greet
			ServerName:    demo.Name,
			ServerVersion: demo.Version,
			// A process is asked for 2025-11-25 (protocol = "auto"), on
			// which it may send requests during a call; the go-sdk would
			// negotiate 2026-07-28 through server/discover.
			Protocol: "2025-11-25",
			Healthy:  true, // no ping has failed (none is due before 10s)
			Circuit:  manager.CircuitClosed,
		}
		require.Equal(t, want, st)
		require.Equal(t, st.Protocol, connected.Fields["protocol"])
		require.EqualValues(t, 4, connected.Fields["tools"])

		all := m.Statuses()
		require.Len(t, all, 1)
		all[0].Instructions, all[0].Capabilities = "", nil
		require.Equal(t, []manager.Status{st}, all)
	})
}

// Tools are listed by full name, sorted, with their shape.
func TestToolsListing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial})
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)

		tools, err := m.Tools("")
		require.NoError(t, err)
		var names []string
		for _, tool := range tools {
			names = append(names, tool.FullName)
			require.Equal(t, "demo", tool.Server)
			require.Equal(t, "demo."+tool.Name, tool.FullName)
			require.True(t, tool.Available)
			require.NotEmpty(t, tool.Description)
			require.NotNil(t, tool.InputSchema)
		}
		require.Equal(t, []string{"demo.add", "demo.echo", "demo.fail", "demo.sleep"}, names)

		_, err = m.Tools("demoo")
		me := requireCode(t, err, manager.ErrServerNotFound, "demoo", "tools")
		require.Contains(t, me.Error(), `did you mean "demo"?`)
	})
}

// A panic inside one server's connection attempt (here the embedder's Dial)
// is recovered and logged with its stack; that server backs off and
// recovers, and no other server notices.
func TestPanicInAttemptIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		var panicked atomic.Bool
		dial := func(ctx context.Context, server string, spec manager.Spec) (mcp.Transport, error) {
			if server == "bad" && panicked.CompareAndSwap(false, true) {
				panic("boom")
			}
			return p.dial(ctx, server, spec)
		}
		var logs testutil.SyncBuffer
		m := newManager(t, manager.Options{Dial: dial, Rand: constRand(0),
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		tl := watch(t, m)
		require.NoError(t, m.Add("good", fakeSpec(t, nil)))
		tl.until("good", events.KindConnected, time.Second)
		require.NoError(t, m.Add("bad", fakeSpec(t, nil)))

		evs := lifecycle(tl.until("bad", events.KindConnected, time.Second))
		require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
		require.Equal(t, `server "bad": connect: internal error: boom`, evs[2].Fields["error"])
		require.Equal(t, 100*ms, evs[4].At-evs[2].At, "the normal schedule: retried after backoff.initial")
		require.Contains(t, logs.String(), `msg="panic in connection attempt" server=bad panic=boom stack=`)
		require.Contains(t, logs.String(), "TestPanicInAttemptIsContained", "the stack shows where it came from")

		st := mustStatus(t, m, "good")
		require.Equal(t, manager.StateConnected, st.State)
		require.Equal(t, 2, p.dialCount(), "one dial each: good's session was not touched by the panic")
		_, err := m.Call(context.Background(), "bad.echo", map[string]any{"text": "ok"}, manager.CallOptions{})
		require.NoError(t, err)
	})
}

// A panic while serving is contained too: the session is reported lost with
// the panic as its reason, the stack is logged, the server reconnects on
// its schedule, and the other server's session is untouched.
func TestPanicWhileServingIsContained(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var panicked atomic.Bool
		manager.SetServeHook(func(server string) {
			if server == "bad" && panicked.CompareAndSwap(false, true) {
				panic("boom")
			}
		})
		t.Cleanup(func() { manager.SetServeHook(nil) })
		p := &peers{}
		var logs testutil.SyncBuffer
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0),
			Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		tl := watch(t, m)
		require.NoError(t, m.Add("good", fakeSpec(t, nil)))
		tl.until("good", events.KindConnected, time.Second)
		require.NoError(t, m.Add("bad", fakeSpec(t, nil)))

		evs := lifecycle(tl.until("bad", events.KindBackoff, time.Second))
		require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindConnected, events.KindDisconnected, events.KindBackoff}, kinds(evs))
		require.Equal(t, `server "bad": session: internal error: boom`, evs[3].Fields["error"])
		require.Contains(t, logs.String(), `msg="panic in supervisor" server=bad panic=boom stack=`)
		require.Contains(t, logs.String(), "TestPanicWhileServingIsContained", "the stack shows where it came from")

		evs = lifecycle(tl.until("bad", events.KindConnected, time.Second))
		require.Equal(t, []events.Kind{events.KindConnecting, events.KindConnected}, kinds(evs))
		_, err := m.Call(context.Background(), "bad.echo", map[string]any{"text": "ok"}, manager.CallOptions{})
		require.NoError(t, err)
		st := mustStatus(t, m, "good")
		require.Equal(t, manager.StateConnected, st.State)
		require.Equal(t, tl.start, st.ConnectedAt, "good's first session is still up")
	})
}

// Lifecycle events carry a typed payload owned by the manager, which a
// consumer reads by type; their fields, what Lua hooks and the log see,
// are what the payload renders.
func TestLifecycleEventsAreTyped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := func(context.Context, string, manager.Spec) (mcp.Transport, error) {
			return nil, errors.New("connection refused")
		}
		m := newManager(t, manager.Options{Dial: refused, Rand: constRand(0)})
		sub := m.Bus().Subscribe(events.SubscribeOptions{})
		defer sub.Close()
		require.NoError(t, m.Add("down", fakeSpec(t, nil)))
		time.Sleep(50 * time.Millisecond) // the first attempt fails; the backoff is 100ms
		synctest.Wait()
		var got []events.Payload
		for {
			e, ok, _ := sub.TryRecv()
			if !ok {
				break
			}
			require.NotNil(t, e.Payload, "%s has no payload", e.Kind)
			require.Equal(t, e.Payload.Kind(), e.Kind)
			require.Equal(t, e.Payload.Fields(), e.Fields, "the fields are the payload's")
			got = append(got, e.Payload)
		}
		require.Len(t, got, 3, "%v", got)
		require.Equal(t, manager.Added{Transport: manager.TransportStdio, Endpoint: "fake-server"}, got[0])
		require.Equal(t, manager.Connecting{Attempt: 1}, got[1])
		backoff, ok := got[2].(manager.BackingOff)
		require.True(t, ok, "%T", got[2])
		require.Equal(t, 1, backoff.Attempt)
		require.Equal(t, 100*time.Millisecond, backoff.Delay)
		require.Contains(t, backoff.Error, "connection refused")
		require.Equal(t, events.Fields{"attempt": 1, "delay_ms": int64(100), "error": backoff.Error}, backoff.Fields())
	})
}
