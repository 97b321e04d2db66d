package manager_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/manager"
)

// The fault tier (faults_*_test.go) runs each fault the manager must
// survive (docs/design.md lists them) against real processes and sockets,
// then checks these invariants when the test ends, after the manager is
// closed:
//
//	E  every error a caller saw names the server and the operation and has a
//	   stable kind (requireFault, at the call site); every error in an event
//	   names the server and an operation.
//	G  no goroutine is left behind (goleak, against the goroutines that ran
//	   before the case started).
//	Z  no child of ours is a zombie; every process group the case started is
//	   gone (kill(-pgid, 0) is ESRCH, or what is left of it is a zombie
//	   grandchild that PID 1 has not reaped yet); no process runs the fakemcp
//	   binary any more.
//	V  no event was lost: the recorder's sequence numbers are contiguous or a
//	   lagged notice covers the gap exactly, delivered+dropped equals what
//	   was published, and each server's lifecycle events form a valid path
//	   through the state machine (one event per state change: no repeats, no
//	   skipped states, a disconnected only while connected, exactly one
//	   removed at the end).
//	M  after runtime.GC(), HeapInuse grew by less than heapSlack, and the
//	   open fds and goroutines are back to their baseline.

// faultRun is one fault case: a manager for real processes or sockets, the
// test's timeline of its events, and what the invariants are checked
// against.
type faultRun struct {
	*timeline
	t *testing.T
	m *manager.Manager

	// heapSlack bounds the growth of HeapInuse over the case (M). Cases
	// that move large frames set it from their frame cap.
	heapSlack uint64

	rec      *events.Subscription // V: every event, read only at the end
	recStart uint64               // bus sequence number when rec subscribed
	bus      *events.Bus
	bin      string // the fakemcp binary
	ignore   goleak.Option
	base     usage

	mu sync.Mutex
	// mu guards the following.
	pgids    map[int]bool
	pidfiles []string
}

// usage is the part of the process's resource use that must return to its
// level before a case (M).
type usage struct {
	heap       uint64
	fds        int
	goroutines int
}

// faultManager starts a fault case: the invariants are registered first, so
// they run after every cleanup the test adds later (closing the manager,
// stopping HTTP servers). opts.StopGrace defaults to stopGrace and opts.Rand
// to no jitter, so schedules are exact.
func faultManager(t *testing.T, opts manager.Options) *faultRun {
	t.Helper()
	if testing.Short() {
		t.Skip("fault tier: real processes and sockets")
	}
	f := &faultRun{t: t, heapSlack: 4 << 20, pgids: map[int]bool{}}
	f.bin = fakemcptest.Build(t)
	warmUp()
	t.Cleanup(f.check)
	f.ignore = goleak.IgnoreCurrent()
	f.base = measureUsage(t)

	if opts.StopGrace == 0 {
		opts.StopGrace = stopGrace
	}
	if opts.Rand == nil {
		opts.Rand = constRand(0)
	}
	f.m = newManager(t, opts)
	f.bus = f.m.Bus()
	f.recStart = f.bus.Published()
	f.rec = f.bus.Subscribe(events.SubscribeOptions{QueueSize: recorderQueue})
	f.timeline = watch(t, f.m)
	return f
}

// recorderQueue is the recorder's queue: more than any case publishes, so a
// lagged notice means a bug, yet small enough (~600 KiB) not to blur M.
const recorderQueue = 8192

// warmUp makes the runtime create what it keeps for good on first use (the
// network poller's descriptors), so that the baseline already counts them.
func warmUp() {
	r, w, err := os.Pipe()
	if err == nil {
		_ = r.SetReadDeadline(time.Now())
		r.Close()
		w.Close()
	}
}

// fakeIn declares fakemcp with flags and extra spec fields (timeouts,
// backoff, …), and has the case check that every process it starts is gone
// at the end: each writes its pid to a pidfile.
func (f *faultRun) fakeIn(extra map[string]any, flags ...string) manager.Spec {
	f.t.Helper()
	pidfile := filepath.Join(f.t.TempDir(), fmt.Sprintf("pids-%d", len(f.pidfiles)))
	f.mu.Lock()
	f.pidfiles = append(f.pidfiles, pidfile)
	f.mu.Unlock()
	cmd := []any{f.bin, "--pidfile=" + pidfile}
	for _, fl := range flags {
		cmd = append(cmd, fl)
	}
	raw := map[string]any{"command": cmd}
	for k, v := range extra {
		raw[k] = v
	}
	return decode(f.t, raw)
}

// pids returns the pids the processes of a spec made by fakeIn wrote so far,
// in start order.
func (f *faultRun) pids(spec manager.Spec) []int {
	f.t.Helper()
	var path string
	for _, a := range spec.Command {
		if p, ok := strings.CutPrefix(a, "--pidfile="); ok {
			path = p
		}
	}
	require.NotEmpty(f.t, path, "spec was not made by fakeIn")
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(f.t, err)
	var out []int
	for _, line := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(line)
		require.NoError(f.t, err, "pidfile %s", path)
		out = append(out, pid)
	}
	return out
}

// trackGroup adds a process group that must be gone at the end.
func (f *faultRun) trackGroup(pgid int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pgids[pgid] = true
}

// requireFault asserts the caller-facing part of invariant E: err is a
// manager error of the sentinel's code, of every kind in also (such as
// ErrTimeout or ErrDisconnected), and its message starts with
// `server "x": op: `.
func requireFault(t testing.TB, err error, sentinel error, server, op string, also ...error) *manager.Error {
	t.Helper()
	me := requireCode(t, err, sentinel, server, op)
	require.True(t, strings.HasPrefix(err.Error(), fmt.Sprintf("server %q: %s: ", server, op)),
		"%q does not start with the server and operation", err)
	for _, k := range also {
		require.ErrorIs(t, err, k, "error %q is not of kind %v", err, k)
	}
	return me
}

// check runs the invariants when the test ends.
func (f *faultRun) check() {
	t := f.t
	f.checkEvents()
	f.checkProcesses()
	goleak.VerifyNone(t, f.ignore)
	f.checkUsage()
}

// ---- V and E: the recorder's events ----

// stateAfter maps each state-changing event kind to the kinds that may
// follow it for the same server. Other kinds (disconnected, tools_changed,
// notification, …) change no state.
var stateAfter = map[events.Kind][]events.Kind{
	events.KindAdded:      {events.KindConnecting, events.KindDisabled, events.KindClosing, events.KindRemoved},
	events.KindConnecting: {events.KindConnected, events.KindBackoff, events.KindFailed, circuitOpen, events.KindClosing, events.KindRemoved},
	events.KindConnected:  {events.KindConnecting, events.KindBackoff, events.KindFailed, circuitOpen, events.KindIdle, events.KindClosing, events.KindRemoved},
	events.KindBackoff:    {events.KindConnecting, events.KindFailed, circuitOpen, events.KindClosing, events.KindRemoved},
	events.KindFailed:     {events.KindConnecting, events.KindClosing, events.KindRemoved},
	events.KindIdle:       {events.KindConnecting, events.KindClosing, events.KindRemoved},
	events.KindDisabled:   {events.KindConnecting, events.KindClosing, events.KindRemoved},
	events.KindClosing:    {events.KindRemoved},
	// An open circuit is a state of its own: next come the probe, or
	// removal.
	circuitOpen:        {events.KindConnecting, events.KindBackoff, events.KindFailed, events.KindClosing, events.KindRemoved},
	events.KindRemoved: nil,
}

// circuitOpen stands for a circuit event whose "to" is "open".
const circuitOpen events.Kind = "circuit-open"

var namesServerAndOp = regexp.MustCompile(`server "[^"]+": \S`)

// checkEvents drains the recorder (the manager is closed, so its bus is
// closed too) and checks V, E for event errors, and collects the process
// groups of connected servers for Z.
func (f *faultRun) checkEvents() {
	t := f.t
	var got []events.Event
	closed := false
	for {
		e, ok, err := f.rec.TryRecv()
		if errors.Is(err, events.ErrClosed) {
			closed = true
			break
		}
		require.NoError(t, err)
		if !ok {
			break // the manager did not close its bus (Close failed): check what there is
		}
		got = append(got, e)
	}
	delivered, dropped := f.rec.Stats()
	f.rec.Close()
	f.rec = nil // its queue must not count against M

	evs, problems := checkSeqs(got, f.recStart, f.bus.Published())
	if published := f.bus.Published() - f.recStart; delivered+dropped != published {
		problems = append(problems, fmt.Sprintf("V: recorder accounting: delivered %d + dropped %d != published %d", delivered, dropped, published))
	}
	problems = append(problems, checkLifecycle(evs, closed)...)
	for _, p := range problems {
		t.Error(p)
	}
	for _, e := range evs {
		if pid := e.Int("pid"); e.Kind == events.KindConnected && pid != 0 {
			f.trackGroup(int(pid))
		}
	}
}

// checkSeqs checks what one subscriber received: sequence numbers follow
// from start, each gap covered exactly by a lagged notice, up to last. It
// returns the events without the notices.
func checkSeqs(got []events.Event, start, last uint64) (evs []events.Event, problems []string) {
	expect := start // the seq the next event should follow
	for _, e := range got {
		if e.Kind == events.KindLagged {
			missed, _ := e.Fields["missed"].(uint64)
			expect += missed
			continue
		}
		if e.Seq != expect+1 {
			problems = append(problems, fmt.Sprintf("V: event #%d follows #%d with no lagged notice covering the gap: %s", e.Seq, expect, e.Format()))
		}
		expect = e.Seq
		evs = append(evs, e)
	}
	if expect != last {
		problems = append(problems, fmt.Sprintf("V: the subscriber got up to #%d, the bus published up to #%d", expect, last))
	}
	return evs, problems
}

// checkLifecycle checks each server's events against the lifecycle: one
// event per state change, a disconnected only while connected (and no
// connected right after it), errors that name the server and operation,
// and, when the manager was closed, a removed at the end.
func checkLifecycle(evs []events.Event, closed bool) (problems []string) {
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	state := map[string]events.Kind{} // per server: the last state-changing event
	lost := map[string]bool{}         // a disconnected since that state
	for _, e := range evs {
		if e.Server == "" {
			continue
		}
		if msg, ok := e.Fields["error"].(string); ok && !namesServerAndOp.MatchString(msg) {
			fail("E: the error of %s does not name the server and operation", e.Format())
		}
		kind := e.Kind
		if kind == events.KindCircuit {
			if e.Text("to") != "open" {
				continue
			}
			kind = circuitOpen
		}
		if kind == events.KindDisconnected {
			if state[e.Server] != events.KindConnected || lost[e.Server] {
				fail("V: %s while %s", e.Format(), describeState(state[e.Server], lost[e.Server]))
			}
			lost[e.Server] = true
			continue
		}
		if _, ok := stateAfter[kind]; !ok {
			continue // no state change
		}
		prev, seen := state[e.Server]
		switch {
		case !seen && kind != events.KindAdded:
			fail("V: %s is the first event of the server, before added", e.Format())
		case seen && !slices.Contains(stateAfter[prev], kind):
			fail("V: %s after %s: not a state change of the lifecycle (a missing or repeated event)", e.Format(), describeState(prev, lost[e.Server]))
		case seen && lost[e.Server] && kind == events.KindConnected:
			fail("V: %s right after a disconnected", e.Format())
		}
		state[e.Server] = kind
		lost[e.Server] = false
	}
	if closed {
		for server, s := range state {
			if s != events.KindRemoved {
				fail("V: server %q ended in %s without a removed event after Close", server, s)
			}
		}
	}
	return problems
}

func describeState(k events.Kind, lost bool) string {
	if k == "" {
		return "no state yet"
	}
	if lost {
		return string(k) + " (disconnected)"
	}
	return string(k)
}

// ---- Z: processes ----

func (f *faultRun) checkProcesses() {
	t := f.t
	if z := zombies(t); len(z) > 0 {
		t.Errorf("Z: unreaped children of the test process: %v", z)
	}
	f.mu.Lock()
	for _, path := range f.pidfiles {
		b, _ := os.ReadFile(path)
		for _, line := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(line); err == nil {
				f.pgids[pid] = true
			}
		}
	}
	pgids := make([]int, 0, len(f.pgids))
	for pgid := range f.pgids {
		pgids = append(pgids, pgid)
	}
	f.mu.Unlock()

	// SIGKILL is delivered asynchronously and an orphaned grandchild is not
	// ours to wait for, so this polls briefly (as requireGroupGone does).
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		var left []string
		for _, pgid := range pgids {
			if err := signal(-pgid, 0); errors.Is(err, syscall.ESRCH) {
				continue
			}
			if running := groupRunning(t, pgid); len(running) > 0 {
				left = append(left, fmt.Sprintf("group %d: %v", pgid, running))
			}
		}
		for _, p := range runningBinary(t, f.bin) {
			left = append(left, fmt.Sprintf("fakemcp pid %d (state %c, group %d)", p.pid, p.state, p.pgrp))
		}
		if len(left) > 0 {
			c.Errorf("Z: still running after the manager closed: %s", strings.Join(left, "; "))
		}
	}, 2*time.Second, 10*time.Millisecond)
}

// runningBinary lists the processes (any state but zombie) whose argv[0] is
// bin.
func runningBinary(t testing.TB, bin string) []procStat {
	var out []procStat
	for _, p := range readProcs(t) {
		if p.state == 'Z' {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.pid))
		if err != nil {
			continue
		}
		argv0, _, _ := bytes.Cut(b, []byte{0})
		if string(argv0) == bin {
			out = append(out, p)
		}
	}
	return out
}

// ---- M: memory, fds and goroutines ----

func measureUsage(t testing.TB) usage {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return usage{heap: ms.HeapInuse, fds: openFDs(t), goroutines: runtime.NumGoroutine()}
}

func openFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

func (f *faultRun) checkUsage() {
	t := f.t
	// Descriptors and goroutines of closed connections go away a moment
	// after Close returns (the server side of a socket, a reader that sees
	// EOF); goleak has already waited for the goroutines, so this rarely
	// loops.
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		now := measureUsage(t)
		now.goroutines-- // this check runs on a goroutine of its own
		if now.fds > f.base.fds {
			c.Errorf("M: %d open fds, %d before the case", now.fds, f.base.fds)
		}
		if now.goroutines > f.base.goroutines {
			c.Errorf("M: %d goroutines, %d before the case", now.goroutines, f.base.goroutines)
		}
	}, 5*time.Second, 20*time.Millisecond)
	now := measureUsage(t)
	if now.heap > f.base.heap && now.heap-f.base.heap >= f.heapSlack {
		t.Errorf("M: HeapInuse grew by %s over the case (limit %s)", mib(now.heap-f.base.heap), mib(f.heapSlack))
	}
	t.Logf("M: HeapInuse %+.2f MiB, fds %d→%d, goroutines %d→%d",
		(float64(now.heap)-float64(f.base.heap))/(1<<20), f.base.fds, now.fds, f.base.goroutines, now.goroutines)
}

func mib(n uint64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

// The checkers must catch what they are for: a checker that passes
// everything would make every fault case pass.
func TestFaultInvariantCheckers(t *testing.T) {
	e := func(seq uint64, kind events.Kind, fields ...any) events.Event {
		f := events.Fields{}
		for i := 0; i+1 < len(fields); i += 2 {
			f[fields[i].(string)] = fields[i+1]
		}
		return events.Event{Seq: seq, Kind: kind, Server: "x", Fields: f}
	}
	lagged := func(n uint64) events.Event {
		return events.Event{Kind: events.KindLagged, Fields: events.Fields{"missed": n}}
	}
	t.Run("seqs", func(t *testing.T) {
		tests := []struct {
			name        string
			got         []events.Event
			start, last uint64
			problems    int
		}{
			{"contiguous", []events.Event{e(3, events.KindAdded), e(4, events.KindConnecting)}, 2, 4, 0},
			{"gap covered by lagged", []events.Event{e(1, events.KindAdded), lagged(2), e(4, events.KindConnecting)}, 0, 4, 0},
			{"gap", []events.Event{e(1, events.KindAdded), e(3, events.KindConnecting)}, 0, 3, 1},
			{"lagged over-counts", []events.Event{e(1, events.KindAdded), lagged(3), e(4, events.KindConnecting)}, 0, 4, 1},
			{"missing tail", []events.Event{e(1, events.KindAdded)}, 0, 2, 1},
		}
		for _, tt := range tests {
			_, problems := checkSeqs(tt.got, tt.start, tt.last)
			require.Len(t, problems, tt.problems, "%s: %v", tt.name, problems)
		}
	})
	t.Run("lifecycle", func(t *testing.T) {
		const errX = `server "x": session: boom`
		tests := []struct {
			name     string
			evs      []events.Event
			closed   bool
			problems int
		}{
			{"crash and reconnect", []events.Event{
				e(1, events.KindAdded), e(2, events.KindConnecting), e(3, events.KindConnected),
				e(4, events.KindDisconnected, "error", errX), e(5, events.KindBackoff, "error", errX),
				e(6, events.KindConnecting), e(7, events.KindConnected), e(8, events.KindRemoved),
			}, true, 0},
			{"open circuit, probe", []events.Event{
				e(1, events.KindAdded), e(2, events.KindConnecting), e(3, events.KindBackoff, "error", errX),
				e(4, events.KindCircuit, "to", "open"), e(5, events.KindConnecting), e(6, events.KindClosing), e(7, events.KindRemoved),
			}, true, 0},
			{"repeated state", []events.Event{e(1, events.KindAdded), e(2, events.KindConnecting), e(3, events.KindConnecting)}, false, 1},
			{"skipped connecting", []events.Event{e(1, events.KindAdded), e(2, events.KindConnected)}, false, 1},
			{"reconnected without a new attempt", []events.Event{
				e(1, events.KindAdded), e(2, events.KindConnecting), e(3, events.KindConnected),
				e(4, events.KindDisconnected, "error", errX), e(5, events.KindConnected),
			}, false, 1},
			{"disconnected while backing off", []events.Event{
				e(1, events.KindAdded), e(2, events.KindConnecting), e(3, events.KindBackoff, "error", errX),
				e(4, events.KindDisconnected, "error", errX),
			}, false, 1},
			{"error without server and operation", []events.Event{
				e(1, events.KindAdded), e(2, events.KindConnecting), e(3, events.KindBackoff, "error", "EOF"),
			}, false, 1},
			{"no removed after close", []events.Event{e(1, events.KindAdded), e(2, events.KindConnecting)}, true, 1},
			{"event after removed", []events.Event{e(1, events.KindAdded), e(2, events.KindRemoved), e(3, events.KindConnecting)}, false, 1},
		}
		for _, tt := range tests {
			problems := checkLifecycle(tt.evs, tt.closed)
			require.Len(t, problems, tt.problems, "%s: %v", tt.name, problems)
		}
	})
}
