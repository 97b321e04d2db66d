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

// switchDial fails every attempt until up is set, then connects to p.
type switchDial struct {
	up    atomic.Bool
	p     *peers
	tries atomic.Int32
}

func (d *switchDial) dial(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
	d.tries.Add(1)
	if !d.up.Load() {
		return nil, errors.New("connection refused")
	}
	return d.p.dial(ctx, name, spec)
}

// The breaker with the defaults: five quick failures (0, 100, 300, 700,
// 1500 ms) open the circuit; calls then fail at once with CIRCUIT_OPEN
// saying when the probe is due; after 30s exactly one probe runs; a failed
// probe reopens for another 30s; a successful one closes the circuit.
func TestBreakerTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &switchDial{p: &peers{}}
		m := newManager(t, manager.Options{Dial: d.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))

		evs := tl.until("x", events.KindCircuit, time.Minute)
		var starts []time.Duration
		for _, e := range only(evs, events.KindConnecting) {
			starts = append(starts, e.At)
		}
		require.Equal(t, []time.Duration{0, 100 * ms, 300 * ms, 700 * ms, 1500 * ms}, starts, "five attempts on the backoff schedule")
		opened := evs[len(evs)-1]
		require.Equal(t, 1500*ms, opened.At)
		require.Equal(t, "closed", opened.Fields["from"])
		require.Equal(t, "open", opened.Fields["to"])
		require.EqualValues(t, 5, opened.Fields["failures"])
		require.EqualValues(t, 30_000, opened.Fields["probe_in_ms"])
		require.Contains(t, opened.Fields["error"], "connection refused")

		st := mustStatus(t, m, "x")
		require.Equal(t, manager.StateOpen, st.State)
		require.Equal(t, manager.CircuitOpen, st.Circuit)
		require.Equal(t, tl.start.Add(31500*ms), st.NextAttempt, "the probe time is published")

		time.Sleep(10 * time.Second)
		before := time.Now()
		_, err := m.Call(context.Background(), "x.echo", nil, manager.CallOptions{})
		require.Zero(t, time.Since(before), "calls fail at once while open")
		requireCode(t, err, manager.ErrCircuitOpen, "x", `tools/call "echo"`)
		r := requireRemedy(t, err, manager.RemedyWait, "x")
		require.Equal(t, tl.start.Add(31500*ms), r.At, "the remedy says when the probe is")
		require.Equal(t, events.KindToolCall, tl.next(time.Second).Kind)

		// The probe at 31.5s fails: open again, timer restarted.
		evs = tl.until("x", events.KindCircuit, time.Minute)
		evs = append(evs, tl.until("x", events.KindCircuit, time.Minute)...)
		require.Equal(t, 31500*ms, evs[0].At)
		require.Equal(t, "half_open", evs[0].Fields["to"])
		require.Equal(t, events.KindConnecting, evs[1].Kind)
		require.Equal(t, true, evs[1].Fields["probe"])
		require.EqualValues(t, 6, evs[1].Fields["attempt"])
		reopened := evs[len(evs)-1]
		require.Equal(t, []events.Kind{events.KindCircuit, events.KindConnecting, events.KindCircuit}, kinds(evs), "exactly one probe")
		require.Equal(t, "half_open", reopened.Fields["from"])
		require.Equal(t, "open", reopened.Fields["to"])
		require.EqualValues(t, 30_000, reopened.Fields["probe_in_ms"])
		require.EqualValues(t, 6, d.tries.Load())

		// The server comes back; the probe at 61.5s succeeds and closes it.
		d.up.Store(true)
		evs = tl.until("x", events.KindCircuit, time.Minute)
		evs = append(evs, tl.until("x", events.KindCircuit, time.Minute)...)
		require.Equal(t, []events.Kind{events.KindCircuit, events.KindConnecting, events.KindConnected, events.KindCircuit}, kinds(evs))
		require.Equal(t, 61500*ms, evs[0].At)
		require.Equal(t, "closed", evs[3].Fields["to"])
		st = mustStatus(t, m, "x")
		require.Equal(t, manager.StateConnected, st.State)
		require.Equal(t, manager.CircuitClosed, st.Circuit)
		require.Empty(t, st.LastError)
	})
}

// The breaker's window: failures further apart than the window never open
// the circuit, however many there are.
func TestBreakerWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: failingDial(errors.New("refused")), Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{
			"backoff": map[string]any{"initial": "1m", "max": "1m"},
			"breaker": map[string]any{"failures": 3, "window": "90s"},
		})))
		time.Sleep(10 * time.Minute)
		evs := tl.quiet(time.Second)
		require.Empty(t, only(evs, events.KindCircuit), "3 failures never fall within 90s when a minute apart")
		require.Len(t, only(evs, events.KindConnecting), 11, "attempts at 0, 1m, … 10m")
		require.Equal(t, manager.StateBackoff, mustStatus(t, m, "x").State)
	})
}

// The breaker with the window: three failures within it open the circuit;
// breaker = false never opens it.
func TestBreakerSettings(t *testing.T) {
	tests := []struct {
		name     string
		breaker  any
		wantOpen time.Duration // 0: never
	}{
		{name: "three within a minute", breaker: map[string]any{"failures": 3, "window": "1m", "open_for": "5s"}, wantOpen: 300 * ms},
		{name: "off", breaker: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newManager(t, manager.Options{Dial: failingDial(errors.New("refused")), Rand: constRand(0)})
				tl := watch(t, m)
				require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"breaker": tt.breaker})))
				time.Sleep(time.Minute)
				circuit := only(tl.quiet(time.Second), events.KindCircuit)
				if tt.wantOpen == 0 {
					require.Empty(t, circuit)
					return
				}
				require.NotEmpty(t, circuit)
				require.Equal(t, tt.wantOpen, circuit[0].At)
				require.EqualValues(t, 5000, circuit[0].Fields["probe_in_ms"])
			})
		})
	}
}

// mcp_reconnect resets the schedule and the breaker and tries at once.
func TestReconnectResetsBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &switchDial{p: &peers{}}
		m := newManager(t, manager.Options{Dial: d.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindCircuit, time.Minute)
		time.Sleep(5 * time.Second)

		d.up.Store(true)
		require.NoError(t, m.Reconnect("x"))
		evs := tl.until("x", events.KindConnected, time.Second)
		require.Equal(t, []events.Kind{events.KindCircuit, events.KindConnecting, events.KindConnected}, kinds(evs))
		require.Equal(t, "closed", evs[0].Fields["to"])
		require.Equal(t, "reset", evs[0].Fields["reason"])
		require.EqualValues(t, 1, evs[1].Fields["attempt"], "the schedule starts over")
		require.Equal(t, 6500*ms, evs[2].At, "at once, not at the probe time")
	})
}

// A crash loop at the logic tier: a server that connects and dies 10ms
// later, every time, never resets the schedule (the session did not prove
// itself), waits one step longer on it than a refused attempt would (a
// full spawn and handshake per turn), and trips the breaker after five
// such failures in a row.
func TestCrashLoopTripsBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		crashing := func(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
			tr, err := p.dial(ctx, name, spec)
			if err == nil {
				p.mu.Lock()
				conn := p.conns[len(p.conns)-1]
				p.mu.Unlock()
				time.AfterFunc(10*ms, func() { _ = conn.Close() })
			}
			return tr, err
		}
		m := newManager(t, manager.Options{Dial: crashing, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		evs := tl.until("x", events.KindCircuit, time.Minute)
		var delays []any
		for _, b := range only(evs, events.KindBackoff) {
			delays = append(delays, b.Fields["delay_ms"])
		}
		require.Equal(t, []any{int64(200), int64(400), int64(800), int64(1600)}, delays, "the schedule continues across short sessions")
		require.Len(t, only(evs, events.KindConnected), 5)
		require.Equal(t, "open", evs[len(evs)-1].Fields["to"])
		require.EqualValues(t, 5, evs[len(evs)-1].Fields["failures"])
	})
}

// The breaker counts failed connection attempts. The loss of a session that
// had proven itself (a crash mid-session) starts the backoff schedule
// (failure 1) but is no failed attempt: five quick retries (0.1 … 1.6 s)
// fail before the circuit opens.
func TestProvenSessionLossIsNoBreakerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &switchDial{p: &peers{}}
		d.up.Store(true)
		m := newManager(t, manager.Options{Dial: d.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)
		time.Sleep(10 * time.Second) // proven: up longer than backoff.max
		tl = watch(t, m)
		d.up.Store(false)
		d.p.drop(t)

		evs := tl.until("x", events.KindCircuit, time.Minute)
		var retries []time.Duration
		for _, e := range only(evs, events.KindConnecting) {
			retries = append(retries, e.At)
		}
		require.Equal(t, []time.Duration{100 * ms, 300 * ms, 700 * ms, 1500 * ms, 3100 * ms}, retries, "five failed attempts")
		require.Equal(t, events.KindDisconnected, evs[0].Kind)
		require.EqualValues(t, 1, evs[1].Fields["attempt"], "the loss is failure 1 of the backoff schedule")
		opened := evs[len(evs)-1]
		require.Equal(t, 3100*ms, opened.At)
		require.EqualValues(t, 6, opened.Fields["failures"], "consecutive failures, the loss included")
		require.Equal(t, "open", opened.Fields["to"])
	})
}
