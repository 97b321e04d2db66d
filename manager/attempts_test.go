package manager_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// slowDials is an Options.Dial whose every dial takes a second (fake time)
// before reaching a fresh demo server; it records the most dials in
// flight at once, the order servers dialled in, and when each first did.
type slowDials struct {
	p     peers
	start time.Time

	mu sync.Mutex
	// mu guards the following.
	now, most int
	order     []string
	first     map[string]time.Duration
}

func (d *slowDials) dial(ctx context.Context, server string, spec manager.Spec) (mcp.Transport, error) {
	d.mu.Lock()
	d.now++
	d.most = max(d.most, d.now)
	d.order = append(d.order, server)
	if _, ok := d.first[server]; !ok {
		d.first[server] = time.Since(d.start)
	}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.now--
		d.mu.Unlock()
	}()
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return d.p.dial(ctx, server, spec)
}

func newSlowDials() *slowDials {
	return &slowDials{start: time.Now(), first: map[string]time.Duration{}}
}

func (d *slowDials) seen() (most int, order []string, first map[string]time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.most, append([]string(nil), d.order...), maps.Clone(d.first)
}

// With MaxConnecting 3 and ten servers declared at once, no more than three
// dial at a time; the others wait in connecting, saying why, and take
// their turns in the order they were declared, three a second, until all
// are connected.
func TestMaxConnectingCapsAttemptsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newSlowDials()
		m := newManager(t, manager.Options{Dial: d.dial, MaxConnecting: 3})
		tl := watch(t, m)
		names := []string{"j", "i", "h", "g", "f", "e", "d", "c", "b", "a"} // declaration order counts, not names
		for _, name := range names {
			require.NoError(t, m.Add(name, fakeSpec(t, nil)))
		}
		synctest.Wait()
		for _, name := range names[3:] {
			st := mustStatus(t, m, name)
			require.Equal(t, manager.StateConnecting, st.State, name)
			require.Equal(t, "max connecting (3) reached", st.Waiting, name)
			require.Equal(t, manager.WaitTurn, st.WaitingFor, name)
			require.False(t, st.Settled(), "%s has not made its first attempt yet", name)
		}
		for _, name := range names[:3] {
			require.Empty(t, mustStatus(t, m, name).Waiting, name)
		}

		tl.until("a", events.KindConnected, 5*time.Second)
		require.Equal(t, 4*time.Second, time.Since(tl.start), "ten attempts of 1s, three at a time")
		for _, name := range names {
			st := mustStatus(t, m, name)
			require.Equal(t, manager.StateConnected, st.State, name)
			require.Empty(t, st.Waiting, name)
		}
		most, _, first := d.seen()
		require.Equal(t, 3, most, "dials in flight at once")
		for i, name := range names { // the three of a second start together, in any order
			require.Equal(t, time.Duration(i/3)*time.Second, first[name], "%s, declared %d-th, takes its turn in second %d", name, i+1, i/3)
		}
	})
}

// A server waiting for its turn can be disabled or removed at once, and
// neither keeps a turn: with MaxConnecting 1, the servers behind them
// still connect one after the other, and the disabled one too once it is
// enabled.
func TestWaitingForTurnDisableRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newSlowDials()
		m := newManager(t, manager.Options{Dial: d.dial, MaxConnecting: 1})
		tl := watch(t, m)
		for _, name := range []string{"a", "b", "c", "d"} {
			require.NoError(t, m.Add(name, fakeSpec(t, nil)))
		}
		synctest.Wait()
		require.Equal(t, "max connecting (1) reached", mustStatus(t, m, "b").Waiting)

		require.NoError(t, m.Disable("b"))
		done, err := m.Remove("c")
		require.NoError(t, err)
		<-done
		synctest.Wait()
		st := mustStatus(t, m, "b")
		require.Equal(t, manager.StateDisabled, st.State)
		require.Empty(t, st.Waiting)

		tl.until("d", events.KindConnected, 3*time.Second)
		require.Equal(t, 2*time.Second, time.Since(tl.start), "d right after a")
		require.NoError(t, m.Enable("b"))
		tl.until("b", events.KindConnected, 2*time.Second)
		require.Equal(t, 3*time.Second, time.Since(tl.start))

		// The turns go on: a server added now connects in its second.
		require.NoError(t, m.Add("e", fakeSpec(t, nil)))
		tl.until("e", events.KindConnected, 2*time.Second)
		require.Equal(t, 4*time.Second, time.Since(tl.start))
		most, order, _ := d.seen()
		require.Equal(t, 1, most)
		require.Equal(t, []string{"a", "d", "b", "e"}, order, "b and c never dialled while waiting")
	})
}

// A server waiting for a connection slot (MaxConnections) holds no turn
// meanwhile: the attempts of servers with a slot are not held up by it.
func TestWaitingForSlotHoldsNoTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newSlowDials()
		m := newManager(t, manager.Options{Dial: d.dial, MaxConnections: 1, MaxConnecting: 1})
		tl := watch(t, m)
		require.NoError(t, m.Add("a", fakeSpec(t, nil)))
		require.NoError(t, m.Add("b", fakeSpec(t, nil)))
		synctest.Wait()
		require.Equal(t, "max connections (1) reached", mustStatus(t, m, "b").Waiting)
		tl.until("a", events.KindConnected, 2*time.Second)

		// a reconnects: it needs a turn again, and b, which waits for a's
		// connection slot, must not hold it.
		require.NoError(t, m.Reconnect("a"))
		tl.until("a", events.KindConnected, 2*time.Second)
		require.Equal(t, 2*time.Second, time.Since(tl.start))
		require.Equal(t, "max connections (1) reached", mustStatus(t, m, "b").Waiting)
	})
}
