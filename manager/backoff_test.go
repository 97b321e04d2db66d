package manager_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

const ms = time.Millisecond

// A server that never comes up is retried on the exact schedule delay(n) =
// min(initial·multiplier^(n−1), max) + jitter·that·r. Each row pins when
// the attempts start and which delay the backoff events announce.
func TestBackoffSchedule(t *testing.T) {
	tests := []struct {
		name  string
		extra map[string]any // spec fields beyond command
		rand  float64
		// want are the delays announced after failures 1, 2, …; attempt n+1
		// starts exactly sum(want[:n]) after the first.
		want []time.Duration
	}{
		{
			name: "defaults without jitter",
			rand: 0,
			want: []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3 * time.Second, 3 * time.Second},
		},
		{
			name: "defaults with full jitter adds 25%",
			rand: 1,
			want: []time.Duration{125 * ms, 250 * ms, 500 * ms, 1000 * ms, 2000 * ms, 3750 * ms, 3750 * ms},
		},
		{
			name: "defaults with half jitter",
			rand: 0.5,
			want: []time.Duration{112500 * time.Microsecond, 225 * ms, 450 * ms, 900 * ms, 1800 * ms, 3375 * ms},
		},
		{
			name:  "a slow schedule: initial 1s, max 60s",
			extra: map[string]any{"backoff": map[string]any{"initial": "1s", "max": "60s"}},
			rand:  0,
			want: []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
				16 * time.Second, 32 * time.Second, 60 * time.Second, 60 * time.Second},
		},
		{
			name:  "jitter 0 disables it even at r=1; multiplier 3; numbers are seconds",
			extra: map[string]any{"backoff": map[string]any{"initial": 0.5, "max": 10, "multiplier": 3, "jitter": 0}},
			rand:  1,
			want:  []time.Duration{500 * ms, 1500 * ms, 4500 * ms, 10 * time.Second, 10 * time.Second},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				spawnErr := errors.New(`exec: "fake-server": executable file not found in $PATH`)
				m := newManager(t, manager.Options{Dial: failingDial(spawnErr), Rand: constRand(tt.rand)})
				tl := watch(t, m)
				extra := map[string]any{"breaker": false} // the breaker has its own test
				for k, v := range tt.extra {
					extra[k] = v
				}
				require.NoError(t, m.Add("x", fakeSpec(t, extra)))

				var evs []ev
				for range len(tt.want) + 1 { // up to the attempt after the last delay
					evs = append(evs, tl.until("x", events.KindConnecting, time.Hour)...)
				}
				var wantStarts, gotStarts []time.Duration
				var at time.Duration
				for i, c := range only(evs, events.KindConnecting) {
					require.EqualValues(t, i+1, c.Fields["attempt"], "attempt number of connecting event %d", i)
					gotStarts = append(gotStarts, c.At)
					wantStarts = append(wantStarts, at)
					if i < len(tt.want) {
						at += tt.want[i]
					}
				}
				require.Equal(t, wantStarts, gotStarts, "attempt start times")

				var gotDelays []time.Duration
				for i, b := range only(evs, events.KindBackoff) {
					require.EqualValues(t, i+1, b.Fields["attempt"], "failure count of backoff event %d", i)
					require.Contains(t, b.Fields["error"], `server "x": spawn: exec: "fake-server"`, "backoff event says why")
					gotDelays = append(gotDelays, time.Duration(b.Fields["delay_ms"].(int64))*ms)
				}
				require.Len(t, gotDelays, len(tt.want))
				for i := range tt.want {
					// delay_ms is whole milliseconds; the start times above are exact.
					require.Equal(t, tt.want[i].Truncate(ms), gotDelays[i], "delay after failure %d", i+1)
				}
			})
		})
	}
}

// Backoff.Delay is the pure function behind the schedule; it caps before
// adding jitter and never overflows for large n.
func TestBackoffDelay(t *testing.T) {
	b := manager.Backoff{Initial: 100 * ms, Max: 3 * time.Second, Multiplier: 2, Jitter: 0.25}
	tests := []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{n: 0, r: 0, want: 100 * ms}, // n < 1 counts as the first failure
		{n: 1, r: 0, want: 100 * ms},
		{n: 1, r: 0.999, want: 124975 * time.Microsecond},
		{n: 6, r: 0, want: 3 * time.Second},
		{n: 6, r: 1, want: 3750 * ms},
		{n: 10_000, r: 0, want: 3 * time.Second},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, b.Delay(tt.n, tt.r), "Delay(%d, %g)", tt.n, tt.r)
	}
	noJitter := b
	noJitter.Jitter = manager.NoJitter
	require.Equal(t, 200*ms, noJitter.Delay(2, 1), "NoJitter ignores r")
}

// max_retries = 3 allows exactly 4 attempts, then the server is failed with
// an error saying so, and calls fail at once.
func TestMaxRetriesGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: failingDial(errors.New("connection refused")), Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"max_retries": 3})))

		evs := tl.until("x", events.KindFailed, time.Hour)
		require.Equal(t, []events.Kind{
			events.KindAdded,
			events.KindConnecting, events.KindBackoff,
			events.KindConnecting, events.KindBackoff,
			events.KindConnecting, events.KindBackoff,
			events.KindConnecting, events.KindFailed,
		}, kinds(evs))
		failed := evs[len(evs)-1]
		require.Equal(t, 700*ms, failed.At, "the 4th attempt fails after 100+200+400ms of backoff")
		require.EqualValues(t, 4, failed.Fields["attempts"])
		const wantErr = `gave up after 4 attempts: server "x": spawn: connection refused`
		require.Equal(t, wantErr, failed.Fields["error"])

		st, err := m.Status("x")
		require.NoError(t, err)
		require.Equal(t, manager.StateFailed, st.State)
		require.Equal(t, wantErr, st.LastError)
		require.Equal(t, manager.Remedy{Kind: manager.RemedyReconnect, Server: "x"}, st.Remedy)

		start := time.Now()
		_, err = m.Call(context.Background(), "x.echo", nil, manager.CallOptions{Timeout: time.Minute})
		require.Zero(t, time.Since(start), "a call to a failed server must not wait")
		requireCode(t, err, manager.ErrConnectionFailed, "x", `tools/call "echo"`)
		require.Contains(t, err.Error(), wantErr)
		require.NotErrorIs(t, err, manager.ErrCannotStart, "it gave up after its retries: no terminal outcome")

		call := tl.next(time.Second)
		require.Equal(t, events.KindToolCall, call.Kind, "the refused call is reported")
		require.Equal(t, "CONNECTION_FAILED", call.Fields["code"])

		// Nothing else happens: no fifth attempt, however long we wait.
		time.Sleep(time.Hour)
		require.Equal(t, manager.StateFailed, mustStatus(t, m, "x").State)
		_, ok, err := tl.sub.TryRecv()
		require.NoError(t, err)
		require.False(t, ok, "no event after failed")
	})
}

// The connect timeout: an attempt whose dial or handshake never completes
// is abandoned at exactly timeouts.connect with CONNECTION_TIMEOUT, then
// the server backs off as after any failure.
func TestConnectTimeout(t *testing.T) {
	tests := []struct {
		name   string
		dial   manager.DialFunc
		wantOp string
	}{
		{
			name: "dial hangs",
			dial: func(ctx context.Context, _ string, _ manager.Spec) (mcp.Transport, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			wantOp: "spawn",
		},
		{
			name: "peer never answers the handshake",
			dial: func(context.Context, string, manager.Spec) (mcp.Transport, error) {
				ct, st := mcp.NewInMemoryTransports()
				conn, err := st.Connect(context.Background())
				if err != nil {
					return nil, err
				}
				go func() { // read and ignore everything until the client hangs up
					defer conn.Close()
					for {
						if _, err := conn.Read(context.Background()); err != nil {
							return
						}
					}
				}()
				return ct, nil
			},
			wantOp: "initialize",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := newManager(t, manager.Options{Dial: tt.dial, Rand: constRand(0)})
				tl := watch(t, m)
				require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"timeouts": map[string]any{"connect": "1s"}})))

				evs := tl.until("x", events.KindBackoff, time.Hour)
				b := evs[len(evs)-1]
				require.Equal(t, time.Second, b.At, "the attempt is abandoned at the connect timeout")
				want := `server "x": ` + tt.wantOp + `: timeout after 1s`
				require.Equal(t, want, b.Fields["error"])
				require.EqualValues(t, 100, b.Fields["delay_ms"])

				st := mustStatus(t, m, "x")
				require.Equal(t, manager.StateBackoff, st.State)
				require.Equal(t, want, st.LastError)

				next := tl.until("x", events.KindConnecting, time.Hour)
				require.Equal(t, 1100*ms, next[len(next)-1].At, "next attempt after the first backoff delay")
				evs = tl.until("x", events.KindBackoff, time.Hour)
				require.Equal(t, 2100*ms, evs[len(evs)-1].At, "the second attempt times out too")
			})
		})
	}
}

func mustStatus(t testing.TB, m *manager.Manager, name string) manager.Status {
	t.Helper()
	st, err := m.Status(name)
	require.NoError(t, err)
	return st
}
