package manager_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// With MaxConnections 2 and three servers, the third waits in connecting,
// saying why; a caller waiting for it gets CONNECTION_LIMIT at its own
// timeout. A holder whose connect fails frees its slot at once, and an idle
// close frees one exactly at the idle timeout. No deadlock.
func TestMaxConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		var aDials atomic.Int32
		dial := func(ctx context.Context, server string, spec manager.Spec) (mcp.Transport, error) {
			if server == "a" && aDials.Add(1) == 1 {
				time.Sleep(time.Second) // a's first connect fails after holding its slot for 1s
				return nil, errors.New("connection refused")
			}
			return p.dial(ctx, server, spec)
		}
		m := newManager(t, manager.Options{Dial: dial, MaxConnections: 2, Rand: constRand(0)})
		tl := watch(t, m)
		idle := map[string]any{"timeouts": map[string]any{"idle": "30s"}}
		for _, name := range []string{"a", "b"} {
			require.NoError(t, m.Add(name, fakeSpec(t, idle)))
			synctest.Wait()
		}
		require.NoError(t, m.Add("c", fakeSpec(t, idle)))
		synctest.Wait()

		st := mustStatus(t, m, "c")
		require.Equal(t, manager.StateConnecting, st.State)
		require.Equal(t, manager.WaitSlot, st.WaitingFor)
		require.Equal(t, "max connections (2) reached", st.Waiting)
		require.True(t, st.Settled(), "a slot may not come free for a long time")
		require.Equal(t, manager.StateConnected, mustStatus(t, m, "b").State)

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := m.Call(ctx, "c.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
		cancel()
		requireCode(t, err, manager.ErrConnectionLimit, "c", "connect")
		require.EqualError(t, err, `server "c": connect: max connections (2) reached; the caller stopped waiting for a slot (context deadline exceeded)`)

		_, err = m.Call(context.Background(), "c.echo", map[string]any{"text": "hi"}, manager.CallOptions{Timeout: 200 * time.Millisecond})
		requireCode(t, err, manager.ErrConnectionLimit, "c", "connect")
		require.ErrorIs(t, err, manager.ErrTimeout)
		require.EqualError(t, err, `server "c": connect: max connections (2) reached; no slot came free within 200ms`)

		// a's connect fails at 1s: its slot goes to c, which was first in line.
		evs := lifecycle(tl.until("c", events.KindConnected, 2*time.Second))
		require.Equal(t, time.Second, evs[len(evs)-1].At, "c connects the moment a's failed attempt frees the slot")
		res, err := m.Call(context.Background(), "c.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
		require.NoError(t, err)
		require.Equal(t, "hi", res.Content[0].(*mcp.TextContent).Text)

		// a retries 100ms later and finds no slot; a caller waiting for it
		// learns why, and what went wrong before.
		time.Sleep(200 * time.Millisecond)
		ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err = m.Wait(ctx, "a", manager.StateConnected)
		cancel()
		require.EqualError(t, err, `server "a": wait: still connecting (waiting: max connections (2) reached), not connected (last error: server "a": spawn: connection refused)`)
		_, err = m.Call(context.Background(), "a.echo", map[string]any{"text": "hi"}, manager.CallOptions{Timeout: 100 * time.Millisecond})
		require.EqualError(t, err, `server "a": connect: max connections (2) reached; no slot came free within 100ms (last error: server "a": spawn: connection refused)`)

		// a waits until b's idle close at exactly 30s (b's last activity
		// was its connect at 0).
		var aEvents, idled []ev
		for _, e := range append(evs, lifecycle(tl.until("a", events.KindConnected, time.Minute))...) {
			switch {
			case e.Server == "a" && e.At > 0:
				aEvents = append(aEvents, e)
			case e.Kind == events.KindIdle:
				idled = append(idled, e)
			}
		}
		require.Equal(t, []events.Kind{events.KindBackoff, events.KindConnecting, events.KindConnecting, events.KindConnected}, kinds(aEvents))
		require.Equal(t, 1100*time.Millisecond, aEvents[1].At)
		require.Equal(t, "max connections (2) reached", aEvents[1].Fields["waiting"])
		require.Nil(t, aEvents[2].Fields["waiting"], "the attempt itself starts once a slot is free")
		require.Len(t, idled, 1)
		require.Equal(t, "b", idled[0].Server)
		require.Equal(t, 30*time.Second, idled[0].At)
		require.Equal(t, 30*time.Second, aEvents[3].At, "a connects the moment b's idle close frees the slot")
		require.Empty(t, mustStatus(t, m, "a").Waiting)
		require.Equal(t, manager.WaitNone, mustStatus(t, m, "a").WaitingFor)

		// b, now idle, needs a slot again: it waits for c's idle close.
		ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err = m.Call(ctx, "b.echo", map[string]any{"text": "back"}, manager.CallOptions{})
		require.NoError(t, err)
		require.Equal(t, "back", res.Content[0].(*mcp.TextContent).Text)
		st = mustStatus(t, m, "b")
		require.Equal(t, manager.StateConnected, st.State)
		require.Equal(t, 31*time.Second, st.ConnectedAt.Sub(tl.start), "c went idle 30s after its last call at 1s")
		require.Equal(t, manager.StateIdle, mustStatus(t, m, "c").State)
	})
}

// A server waiting for a connection slot can be disabled or removed at
// once; neither takes a slot or leaves the waiting note behind.
func TestWaitingForSlotDisableRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, MaxConnections: 1})
		tl := watch(t, m)
		require.NoError(t, m.Add("a", fakeSpec(t, nil)))
		tl.until("a", events.KindConnected, time.Second)
		require.NoError(t, m.Add("b", fakeSpec(t, nil)))
		require.NoError(t, m.Add("c", fakeSpec(t, nil)))
		synctest.Wait()
		require.Equal(t, "max connections (1) reached", mustStatus(t, m, "b").Waiting)

		require.NoError(t, m.Disable("b"))
		synctest.Wait()
		st := mustStatus(t, m, "b")
		require.Equal(t, manager.StateDisabled, st.State)
		require.Empty(t, st.Waiting)

		done, err := m.Remove("c")
		require.NoError(t, err)
		<-done
		_, err = m.Status("c")
		requireCode(t, err, manager.ErrServerNotFound, "c", "status")

		_, err = m.Remove("a")
		require.NoError(t, err)
		require.NoError(t, m.Enable("b"))
		tl.until("b", events.KindConnected, time.Second)
		require.Equal(t, 2, p.dialCount(), "only a and b ever dialled")
	})
}

// mcp_reconnect of a connected server under the cap keeps its slot: the
// new session replaces the old one at once, and a server waiting for a
// slot goes on waiting.
func TestReconnectKeepsItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, MaxConnections: 1})
		tl := watch(t, m)
		require.NoError(t, m.Add("a", fakeSpec(t, nil)))
		tl.until("a", events.KindConnected, time.Second)
		require.NoError(t, m.Add("b", fakeSpec(t, nil)))
		synctest.Wait()
		require.Equal(t, "max connections (1) reached", mustStatus(t, m, "b").Waiting)

		time.Sleep(time.Second)
		require.NoError(t, m.Reconnect("a"))
		evs := lifecycle(tl.until("a", events.KindConnected, time.Second))
		var aKinds []events.Kind
		for _, e := range evs {
			if e.Server == "a" {
				aKinds = append(aKinds, e.Kind)
			}
		}
		require.Equal(t, []events.Kind{events.KindDisconnected, events.KindConnecting, events.KindConnected}, aKinds)
		require.Equal(t, time.Second, evs[len(evs)-1].At, "at once")
		synctest.Wait()
		st := mustStatus(t, m, "b")
		require.Equal(t, manager.StateConnecting, st.State)
		require.Equal(t, "max connections (1) reached", st.Waiting, "b still waits")
		require.Equal(t, 2, p.dialCount(), "a twice, b never")
	})
}

// Servers beyond the cap connect in the order they were declared, however
// their goroutines happen to be scheduled: Add puts each in line, and each
// freed slot goes to the first in line.
func TestSlotsFollowDeclarationOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: (&peers{}).dial, MaxConnections: 2})
		start := time.Now()
		names := []string{"e", "d", "c", "b", "a"} // not alphabetical: declaration order counts
		for _, name := range names {
			require.NoError(t, m.Add(name, fakeSpec(t, nil)))
		}
		synctest.Wait()
		for _, name := range names[:2] {
			require.Equal(t, manager.StateConnected, mustStatus(t, m, name).State, name)
		}
		for _, name := range names[2:] {
			require.Equal(t, "max connections (2) reached", mustStatus(t, m, name).Waiting, name)
		}

		// One removal a second, each freeing one slot for the next in line.
		for i, name := range names[:3] {
			time.Sleep(time.Second)
			_, err := m.Remove(name)
			require.NoError(t, err)
			synctest.Wait()
			next := mustStatus(t, m, names[i+2])
			require.Equal(t, manager.StateConnected, next.State, "%s is next when %s goes", next.Name, name)
			require.Equal(t, time.Duration(i+1)*time.Second, next.ConnectedAt.Sub(start))
		}
	})
}

// An idle server woken by a call joins the line for a slot; when every
// caller has given up before a slot came free, it goes back to idle and
// leaves the line, so a free slot later is not spent on it. Callers still
// waiting keep it in line.
func TestIdleServerLeavesTheLineWhenNobodyWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, MaxConnections: 1})
		tl := watch(t, m)
		require.NoError(t, m.Add("b", fakeSpec(t, map[string]any{"timeouts": map[string]any{"idle": "1s"}})))
		tl.until("b", events.KindIdle, 2*time.Second)
		require.NoError(t, m.Add("a", fakeSpec(t, nil)))
		tl.until("a", events.KindConnected, time.Second)

		_, err := m.Call(context.Background(), "b.echo", map[string]any{"text": "hi"}, manager.CallOptions{Timeout: 100 * time.Millisecond})
		requireCode(t, err, manager.ErrConnectionLimit, "b", "connect")
		evs := lifecycle(tl.until("b", events.KindIdle, time.Second))
		require.Equal(t, []events.Kind{events.KindConnecting, events.KindIdle}, kinds(evs))
		require.Equal(t, "max connections (1) reached", evs[0].Fields["waiting"])
		require.Equal(t, "no caller is waiting for a connection slot any more", evs[1].Fields["reason"])
		require.Equal(t, evs[0].At+100*time.Millisecond, evs[1].At, "back to idle the moment the caller gives up")
		st := mustStatus(t, m, "b")
		require.Equal(t, manager.StateIdle, st.State)
		require.Empty(t, st.Waiting)

		// Waiting for it to be connected wakes it the same way, and giving
		// up sends it back.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err = m.Wait(ctx, "b", manager.StateConnected)
		cancel()
		require.ErrorIs(t, err, manager.ErrConnectionTimeout)
		evs = lifecycle(tl.until("b", events.KindIdle, time.Second))
		require.Equal(t, []events.Kind{events.KindConnecting, events.KindIdle}, kinds(evs))
		require.Equal(t, evs[0].At+100*time.Millisecond, evs[1].At)

		// a's slot is free now, and nobody wants b: it stays idle.
		_, err = m.Remove("a")
		require.NoError(t, err)
		time.Sleep(time.Minute)
		require.Equal(t, manager.StateIdle, mustStatus(t, m, "b").State)
		require.Equal(t, 2, p.dialCount(), "b once at first, a once")

		// Two callers; the first gives up, the second keeps b in line and
		// is served when the slot frees.
		require.NoError(t, m.Add("a2", fakeSpec(t, nil)))
		tl.until("a2", events.KindConnected, time.Second)
		patient := make(chan error, 1)
		go func() {
			_, err := m.Call(context.Background(), "b.echo", map[string]any{"text": "hi"}, manager.CallOptions{Timeout: time.Minute})
			patient <- err
		}()
		_, err = m.Call(context.Background(), "b.echo", map[string]any{"text": "hi"}, manager.CallOptions{Timeout: 100 * time.Millisecond})
		requireCode(t, err, manager.ErrConnectionLimit, "b", "connect")
		time.Sleep(time.Second)
		require.Equal(t, "max connections (1) reached", mustStatus(t, m, "b").Waiting, "still in line for the patient caller")
		_, err = m.Remove("a2")
		require.NoError(t, err)
		require.NoError(t, <-patient)
		require.Equal(t, manager.StateConnected, mustStatus(t, m, "b").State)
	})
}

// Settled tells a server that has had its first say from one still on its
// first attempt by the state and the typed reason it waits for, whatever
// the words of Status.Waiting.
func TestSettled(t *testing.T) {
	tests := []struct {
		name string
		st   manager.Status
		want bool
	}{
		{"first attempt", manager.Status{State: manager.StateConnecting}, false},
		{"waiting for its turn", manager.Status{State: manager.StateConnecting, WaitingFor: manager.WaitTurn, Waiting: "max connections, of a kind (3) reached"}, false},
		{"waiting for a slot", manager.Status{State: manager.StateConnecting, WaitingFor: manager.WaitSlot, Waiting: "no free connection (2)"}, true},
		{"after a failed attempt", manager.Status{State: manager.StateConnecting, Attempts: 1}, true},
		{"backing off", manager.Status{State: manager.StateBackoff}, true},
		{"connected", manager.Status{State: manager.StateConnected}, true},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.st.Settled(), tt.name)
	}
}
