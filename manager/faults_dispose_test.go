package manager_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Disposal at the process tier: a real fakemcp server is removed, or the
// whole manager shut down, while calls are in flight, while the server
// hangs in initialize, and while it waits out a backoff. The logic tier
// pins the exact timelines (TestRemoveDrainsCallsInFlight,
// TestRemoveAbandonsCallsPastTheDrain, TestRemoveDuringBackoff); here the
// clock is real, so the timing bounds are generous and only say "promptly"
// or "not before". Each case ends with the invariants E G Z V M.

// The timeline of the in-flight case. The short calls are still running
// when disposal begins and end well inside the drain; the long ones would
// outlive any test and must be abandoned when the drain runs out.
const (
	drain28     = 2 * time.Second
	shortCall28 = 700 * time.Millisecond
	longCall28  = time.Minute
	calls28     = 100 // half short, half long
)

// callResult is what one background call returned, and when.
type callResult struct {
	long bool
	res  *mcp.CallToolResult
	err  error
	at   time.Time
}

var (
	toolCallID  = regexp.MustCompile(`(?m)^tools/call id=(\S+)$`)
	cancelledID = regexp.MustCompile(`(?m)^notifications/cancelled requestId=(\S+)$`)
)

// recordIDs returns the first capture group of every match of re in the
// --record file at path, in order.
func recordIDs(t *testing.T, path string, re *regexp.Regexp) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var ids []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// missing returns the elements of want that are not in got.
func missing(want, got []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	return out
}

// awaitDone waits for a disposal to complete, failing t after patience.
func awaitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("%s not complete within %s", what, patience)
	}
}

// Disposal with 100 calls in flight on one server, by Remove and by Close
// (shutdown). Half the calls take 700ms and finish inside the 2s drain:
// they succeed. Half would take a minute: when the drain runs out they fail
// as abandoned, and the server is told about each of them
// (notifications/cancelled) before its stdin closes. A call started once
// disposal has begun is refused with CLOSED while the others drain.
// Disposal completes once the drain has run out and the process is
// stopped, the process group is gone, and removed is the server's last
// event.
func TestDisposeWithCallsInFlight(t *testing.T) {
	tests := []struct {
		name   string
		reason string // of the closing and removed events
		// dispose starts the disposal; done is closed when it is complete,
		// then wait returns its error.
		dispose func(t *testing.T, f *faultRun) (done <-chan struct{}, wait func() error)
	}{
		{
			name:   "remove",
			reason: "removed",
			dispose: func(t *testing.T, f *faultRun) (<-chan struct{}, func() error) {
				done, err := f.m.Remove("x")
				require.NoError(t, err)
				return done, func() error { return nil }
			},
		},
		{
			name:   "close",
			reason: "shutdown",
			dispose: func(t *testing.T, f *faultRun) (<-chan struct{}, func() error) {
				done := make(chan struct{})
				var err error
				go func() {
					defer close(done)
					ctx, cancel := context.WithTimeout(context.Background(), patience)
					defer cancel()
					err = f.m.Close(ctx)
				}()
				return done, func() error { return err }
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := faultManager(t, manager.Options{DrainTimeout: drain28})
			record := filepath.Join(t.TempDir(), "record")
			// The request timeout is far beyond the drain, so the drain
			// alone decides when the long calls are abandoned.
			spec := f.fakeIn(quick(map[string]any{"timeouts": map[string]any{"connect": "5s", "request": "10m"}}),
				"--record="+record)
			require.NoError(t, f.m.Add("x", spec))
			f.until("x", events.KindConnected, patience)
			pid := mustStatus(t, f.m, "x").PID
			require.NotZero(t, pid)

			results := make(chan callResult, calls28)
			start := func(long bool, d time.Duration) {
				go func() {
					res, err := f.m.Call(context.Background(), "x.slow", map[string]any{"ms": d.Milliseconds()}, manager.CallOptions{})
					results <- callResult{long: long, res: res, err: err, at: time.Now()}
				}()
			}
			// The long calls first, so that the first ids the server
			// records are theirs.
			for range calls28 / 2 {
				start(true, longCall28)
			}
			awaitRecord(t, record, toolCallLine, calls28/2)
			longIDs := recordIDs(t, record, toolCallID)
			for range calls28 / 2 {
				start(false, shortCall28)
			}
			awaitRecord(t, record, toolCallLine, calls28) // all in flight

			began := time.Now()
			done, wait := tt.dispose(t, f)

			// Disposal has begun once closing is out; a call made now is
			// refused at once, while the others drain.
			evs := lifecycle(f.until("x", events.KindClosing, patience))
			require.Equal(t, []events.Kind{events.KindClosing}, kinds(evs))
			require.Equal(t, tt.reason, evs[0].Fields["reason"])
			// Refused while the disposal drains (that it is refused at
			// once is pinned in fake time by TestRemoveDrainsCallsInFlight).
			_, lateErr := f.m.Call(context.Background(), "x.echo", map[string]any{"text": "late"}, manager.CallOptions{Timeout: patience})
			select {
			case <-done:
				t.Fatal("the late call was answered only once the disposal was over")
			default:
			}
			t.Run("a call made during disposal is refused with CLOSED", func(t *testing.T) {
				requireFault(t, lateErr, manager.ErrClosed, "x", `tools/call "echo"`)
			})

			// Within patience: the long calls would run a minute.
			awaitDone(t, done, "disposal")
			took := time.Since(began)
			require.NoError(t, wait())
			require.GreaterOrEqual(t, took, drain28, "disposal waited for the drain (calls were still in flight)")
			t.Logf("disposal took %s (drain %s)", took.Round(time.Millisecond), drain28)

			// Every caller is answered: the short ones with their result,
			// the long ones with the abandonment, when the drain ran out.
			var short, long int
			for range calls28 {
				var r callResult
				select {
				case r = <-results:
				case <-time.After(patience):
					t.Fatalf("only %d short and %d long calls returned within %s of the disposal", short, long, patience)
				}
				at := r.at.Sub(began)
				if !r.long {
					short++
					require.NoError(t, r.err, "a call that ends within the drain succeeds")
					require.Equal(t, fmt.Sprintf("slept %dms", shortCall28.Milliseconds()), text(t, r.res))
					require.Positive(t, at, "precondition: the short call was still running when disposal began (a slow machine?)")
					continue
				}
				long++
				requireFault(t, r.err, manager.ErrInvocationFailed, "x", `tools/call "slow"`, manager.ErrDisconnected)
				require.NotErrorIs(t, r.err, manager.ErrTimeout, "the drain, not the call's own timeout, ended it")
				require.Contains(t, r.err.Error(), "the server was closed while the request ran")
				require.GreaterOrEqual(t, at, drain28, "not abandoned before the drain ran out")
			}

			require.ErrorIs(t, signal(pid, 0), syscall.ESRCH, "the server is reaped")
			requireGroupGone(t, pid)

			// closing, then removed last: the calls' own events come
			// before it, nothing of the server after it. Every caller has
			// returned, so whatever they published is queued by now.
			evs = f.until("x", events.KindRemoved, patience)
			require.Equal(t, []events.Kind{events.KindRemoved}, kinds(lifecycle(evs)))
			require.Equal(t, tt.reason, evs[len(evs)-1].Fields["reason"])
			var late []string
			for {
				e, ok, err := f.sub.TryRecv()
				if err != nil || !ok {
					break // drained (or the bus is closed: Close)
				}
				if e.Server == "x" {
					late = append(late, e.Format())
				}
			}
			t.Run("removed is the server's last event", func(t *testing.T) {
				require.Empty(t, late, "events of the server after its removed event")
				require.Equal(t, calls28, len(only(evs, events.KindToolCall)), "tool_call events before removed, one per call")
			})

			// The process is gone, so its record is complete.
			require.Len(t, longIDs, calls28/2)
			cancelled := recordIDs(t, record, cancelledID)
			t.Run("the server is told of each abandoned call", func(t *testing.T) {
				require.Empty(t, missing(longIDs, cancelled),
					"abandoned calls (ids) the server was never sent notifications/cancelled for; it got %d of %d", len(cancelled), len(longIDs))
				require.Empty(t, missing(cancelled, longIDs), "cancellations of calls that were not abandoned")
				require.Len(t, cancelled, len(longIDs), "one notifications/cancelled per abandoned call")
			})
		})
	}
}

// Disposal during connect: a server that never answers initialize, with a
// connect timeout of a minute, is removed. The attempt is cut short:
// removal completes once the process is stopped, not at the connect timeout; the
// process group (with a grandchild, ignoring EOF and SIGTERM in the
// stubborn variant) is gone; the server goes connecting → closing →
// removed, with no backoff or failure in between.
func TestDisposeDuringInitialize(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
	}{
		{"exits on stdin EOF", nil},
		{"stubborn", []string{"--no-exit-on-stdin-eof", "--ignore-sigterm", "--spawn-grandchild"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := faultManager(t, manager.Options{})
			record := filepath.Join(t.TempDir(), "record")
			const connectTimeout = time.Minute
			spec := f.fakeIn(quick(map[string]any{"timeouts": map[string]any{"connect": connectTimeout.String()}}),
				append([]string{"--hang-initialize", "--record=" + record}, tt.flags...)...)
			require.NoError(t, f.m.Add("x", spec))
			evs := lifecycle(f.until("x", events.KindConnecting, patience))
			require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting}, kinds(evs))
			// The client's first request of the handshake (initialize: a
			// process is asked for 2025-11-25) reached the server, which
			// never answers.
			awaitRecord(t, record, regexp.MustCompile(`(?m)^initialize id=`), 1)
			pids := f.pids(spec)
			require.Len(t, pids, 1)

			began := time.Now()
			done, err := f.m.Remove("x")
			require.NoError(t, err)
			// Within patience: it stops the process at once rather than
			// wait for the connect timeout of a minute.
			awaitDone(t, done, "removal")
			t.Logf("removal took %s", time.Since(began).Round(time.Millisecond))

			evs = lifecycle(f.until("x", events.KindRemoved, patience))
			require.Equal(t, []events.Kind{events.KindClosing, events.KindRemoved}, kinds(evs),
				"removal is not a failed attempt: no backoff, no failed")
			require.Equal(t, "removed", evs[0].Fields["reason"])
			require.ErrorIs(t, signal(pids[0], 0), syscall.ESRCH, "the server is reaped")
			requireGroupGone(t, pids[0])
			require.Len(t, f.pids(spec), 1, "no second attempt")
		})
	}
}

// Disposal during backoff: a server whose process fails every attempt waits
// out an hour of backoff when it is removed. Removal completes at once; the
// backoff wait is cancelled: no attempt follows closing (the server goes
// backoff → closing → removed and no second process is spawned).
func TestDisposeDuringBackoff(t *testing.T) {
	f := faultManager(t, manager.Options{})
	spec := f.fakeIn(quick(map[string]any{"backoff": map[string]any{"initial": "1h", "max": "1h"}}),
		"--garbage-stdout=before-init")
	require.NoError(t, f.m.Add("x", spec))
	evs := lifecycle(f.until("x", events.KindBackoff, patience))
	require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindBackoff}, kinds(evs))
	require.EqualValues(t, time.Hour.Milliseconds(), evs[2].Fields["delay_ms"])
	require.Contains(t, evs[2].Fields["error"], `server "x": initialize: protocol error`)
	pids := f.pids(spec)
	require.Len(t, pids, 1)
	requireGroupGone(t, pids[0]) // the failed attempt's process is already stopped

	began := time.Now()
	done, err := f.m.Remove("x")
	require.NoError(t, err)
	awaitDone(t, done, "removal") // within patience, not the hour of backoff
	t.Logf("removal took %s", time.Since(began).Round(time.Millisecond))

	evs = lifecycle(f.until("x", events.KindRemoved, patience))
	require.Equal(t, []events.Kind{events.KindClosing, events.KindRemoved}, kinds(evs), "no attempt after closing")
	require.Equal(t, "removed", evs[0].Fields["reason"])
	require.Len(t, f.pids(spec), 1, "no process spawned after the removal")
}
