package manager_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/internal/proc"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// TestMain lets the test binary serve as the servers' shim and as the
// host of TestStdioHostKilledLeavesNoProcess, fails the package if any
// test leaves a goroutine behind (invariant G of invariants_test.go) and
// removes the fakemcp binary afterwards.
func TestMain(m *testing.M) {
	proc.RunShimIfAsked()
	serveDemoIfAsked()
	if command := os.Getenv(testHostEnv); command != "" {
		os.Exit(runTestHost(command))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { fakemcptest.Cleanup() }))
}

// ---- logic tier: in-memory peers inside a synctest bubble ----

// constRand is an Options.Rand that always returns r, which pins the jitter.
func constRand(r float64) func() float64 { return func() float64 { return r } }

// decode builds a spec through DecodeSpec (the way users declare servers),
// failing t if it is rejected.
func decode(t testing.TB, raw map[string]any) manager.Spec {
	t.Helper()
	s, err := config.DecodeSpec("test", raw, config.DecodeOptions{})
	require.NoError(t, err, "DecodeSpec(%v)", raw)
	return s
}

// fakeSpec is a stdio declaration for the logic tier, whose Options.Dial
// ignores the command; extra adds or overrides fields.
func fakeSpec(t testing.TB, extra map[string]any) manager.Spec {
	t.Helper()
	raw := map[string]any{"command": []any{"fake-server"}}
	for k, v := range extra {
		raw[k] = v
	}
	return decode(t, raw)
}

// peers is an Options.Dial that connects every attempt to a fresh in-memory
// MCP server (the demo server unless newServer is set) and remembers the
// server side, so a test can end a session as a crashing server would.
type peers struct {
	newServer func() *mcp.Server
	delay     time.Duration // each dial takes this long (fake time)

	mu sync.Mutex
	// mu guards the following.
	dials    int
	sessions []*mcp.ServerSession
	conns    []mcp.Connection // the server side of each session
}

func (p *peers) dial(ctx context.Context, _ string, _ manager.Spec) (mcp.Transport, error) {
	p.mu.Lock()
	p.dials++
	p.mu.Unlock()
	if p.delay > 0 {
		select {
		case <-time.After(p.delay):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	newServer := p.newServer
	if newServer == nil {
		newServer = demo.NewServer
	}
	ct, st := mcp.NewInMemoryTransports()
	rt := &rawTransport{Transport: st}
	ss, err := newServer().Connect(context.Background(), rt, nil)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.sessions = append(p.sessions, ss)
	p.conns = append(p.conns, rt.conn)
	p.mu.Unlock()
	return ct, nil
}

// rawTransport keeps the server side's connection, so that a test can cut
// it the way a dying process does. (ServerSession.Close is graceful: it
// waits for the requests in flight, which a crash does not.)
type rawTransport struct {
	mcp.Transport
	conn mcp.Connection
}

func (r *rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	r.conn = c
	return c, err
}

func (p *peers) dialCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dials
}

// drop cuts the newest connection abruptly, as a server that dies would.
func (p *peers) drop(t testing.TB) {
	t.Helper()
	p.mu.Lock()
	conns := p.conns
	p.mu.Unlock()
	require.NotEmpty(t, conns, "no connection to drop")
	require.NoError(t, conns[len(conns)-1].Close())
}

// failingDial is an Options.Dial whose every attempt fails with err.
func failingDial(err error) manager.DialFunc {
	return func(context.Context, string, manager.Spec) (mcp.Transport, error) { return nil, err }
}

// newManager returns a manager that is closed (and must close cleanly) when
// the test ends.
func newManager(t testing.TB, opts manager.Options) *manager.Manager {
	t.Helper()
	m := manager.New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, m.Close(ctx), "Close")
	})
	return m
}

// ev is one event as a timeline records it: when (since the timeline
// started), what, and its fields.
type ev struct {
	At     time.Duration
	Kind   events.Kind
	Server string
	Fields events.Fields
}

// timeline subscribes to a manager's bus and hands out its events with
// their offsets from the moment it started. Inside a synctest bubble the
// offsets are exact.
type timeline struct {
	t     testing.TB
	sub   *events.Subscription
	start time.Time
	// notes are the manager's notices (what servers said), apart from the
	// bus's events; the listener never makes a server wait.
	notes *notify.Listener
}

func watch(t testing.TB, m *manager.Manager) *timeline {
	sub := m.Bus().Subscribe(events.SubscribeOptions{QueueSize: 4096})
	t.Cleanup(sub.Close)
	notes := m.Notices().Listen(notify.ListenOptions{QueueSize: 4096})
	t.Cleanup(notes.Close)
	return &timeline{t: t, sub: sub, start: time.Now(), notes: notes}
}

// heard returns the notices that come within d, as events (kind
// notification, method and params), failing the test on a lost one.
func (tl *timeline) heard(d time.Duration) []ev {
	tl.t.Helper()
	var got []ev
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		n, err := tl.notes.Next(ctx)
		if err != nil {
			return got
		}
		require.NotEqual(tl.t, events.KindLagged, n.Kind(), "notices lost: %v", n.Fields())
		got = append(got, tl.noticeEv(n))
	}
}

func (tl *timeline) noticeEv(n notify.Notice) ev {
	o := n.From()
	return ev{At: o.Time.Sub(tl.start), Kind: n.Kind(), Server: o.Server, Fields: n.Fields()}
}

// next returns the next event, failing the test if none comes within wait.
func (tl *timeline) next(wait time.Duration) ev {
	tl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	e, err := tl.sub.Recv(ctx)
	require.NoError(tl.t, err, "waiting for the next event")
	require.NotEqual(tl.t, events.KindLagged, e.Kind, "subscriber lagged: %v", e.Fields)
	return ev{At: e.Time.Sub(tl.start), Kind: e.Kind, Server: e.Server, Fields: e.Fields}
}

// until returns the events up to and including the first one of kind for
// server ("" for any), failing the test if it does not come within wait.
func (tl *timeline) until(server string, kind events.Kind, wait time.Duration) []ev {
	tl.t.Helper()
	deadline := time.Now().Add(wait)
	var got []ev
	for {
		left := time.Until(deadline)
		require.Positive(tl.t, left, "no %s event for %q within %s; got %v", kind, server, wait, got)
		e := tl.next(left)
		got = append(got, e)
		if e.Kind == kind && (server == "" || e.Server == server) {
			return got
		}
	}
}

// kinds lists the kinds of evs, for comparing sequences.
func kinds(evs []ev) []events.Kind {
	out := make([]events.Kind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// lifecycle drops tool_call events, which concurrent calls interleave with
// the lifecycle at no fixed place.
func lifecycle(evs []ev) []ev {
	var out []ev
	for _, e := range evs {
		if e.Kind != events.KindToolCall {
			out = append(out, e)
		}
	}
	return out
}

// from keeps the events of one server: another's may come between them
// at no fixed place.
func from(server string, evs []ev) []ev {
	var out []ev
	for _, e := range evs {
		if e.Server == server {
			out = append(out, e)
		}
	}
	return out
}

// only keeps the events of one kind.
func only(evs []ev, kind events.Kind) []ev {
	var out []ev
	for _, e := range evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// requireCode asserts err is a manager error of the sentinel's code, naming
// server (when non-empty) and op, and returns it.
func requireCode(t testing.TB, err error, sentinel error, server, op string) *manager.Error {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, sentinel, "error %q has the wrong code", err)
	var me *manager.Error
	require.True(t, errors.As(err, &me), "%T is not a *manager.Error", err)
	require.Equal(t, server, me.Server, "server of %q", err)
	require.Equal(t, op, me.Op, "operation of %q", err)
	return me
}

// requireRemedy checks err's remedy, found with errors.As.
func requireRemedy(t testing.TB, err error, kind manager.RemedyKind, server string) manager.Remedy {
	t.Helper()
	r, ok := manager.RemedyOf(err)
	require.True(t, ok, "error %q has no remedy", err)
	require.Equal(t, kind, r.Kind, "remedy of %q", err)
	require.Equal(t, server, r.Server, "remedy's server of %q", err)
	return r
}

// ---- process tier: /proc checks (invariant Z: no zombie, no survivor) ----

// procStat is the part of /proc/PID/stat the checks need.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

func readProcs(t testing.TB) []procStat {
	t.Helper()
	paths, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var out []procStat
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process went away meanwhile
		}
		// "pid (comm) state ppid pgrp …"; comm may hold spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(s)[0])
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		out = append(out, procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]})
	}
	return out
}

// zombies lists our children that have exited but were never reaped.
func zombies(t testing.TB) []int {
	var out []int
	for _, p := range readProcs(t) {
		if p.ppid == os.Getpid() && p.state == 'Z' {
			out = append(out, p.pid)
		}
	}
	return out
}

// noZombies checks, when the test ends (after cleanups registered later,
// such as closing the manager), that no child of ours is a zombie.
func noZombies(t testing.TB) {
	t.Cleanup(func() {
		require.Empty(t, zombies(t), "unreaped children of the test process")
	})
}

// groupRunning lists members of process group pgid that still run (any
// state but Z: an orphan reparented to a PID 1 that does not reap may stay
// a zombie, which the checks accept for grandchildren).
func groupRunning(t testing.TB, pgid int) []procStat {
	var out []procStat
	for _, p := range readProcs(t) {
		if p.pgrp == pgid && p.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// requireGroupGone asserts that nothing of process group pgid runs any more.
// SIGKILL is delivered asynchronously, so a grandchild may take a moment to
// die after the group kill; this polls for at most 2s (there is nothing to
// wait on for a process we are not the parent of).
func requireGroupGone(t testing.TB, pgid int) {
	t.Helper()
	require.NotZero(t, pgid)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, groupRunning(t, pgid), "process group %d still has running members", pgid)
	}, 2*time.Second, 10*time.Millisecond)
}
