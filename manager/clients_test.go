package manager_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
)

// perClient declares fakemcp as a per-client server whose echo answers
// the pid of the process that ran it.
func perClient(t *testing.T, extra map[string]any) manager.Spec {
	raw := map[string]any{"command": []any{fakemcptest.Build(t), "--reply={pid}"}, "session": "per_client"}
	for k, v := range extra {
		raw[k] = v
	}
	return decode(t, raw)
}

// whoami calls pc.echo as client and returns the pid that answered.
func whoami(t *testing.T, m *manager.Manager, client string) int {
	t.Helper()
	res, err := m.Call(context.Background(), "pc.echo", map[string]any{"text": "?"}, manager.CallOptions{Client: client, Timeout: patience})
	require.NoError(t, err, "client %q", client)
	pid, err := strconv.Atoi(text(t, res))
	require.NoError(t, err)
	return pid
}

// running reports whether pid runs (exists and is not a zombie).
func running(t *testing.T, pid int) bool {
	if signal(pid, 0) != nil {
		return false
	}
	for _, p := range readProcs(t) {
		if p.pid == pid {
			return p.state != 'Z'
		}
	}
	return false
}

// awaitGone waits (bounded) for a process to end.
func awaitGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return !running(t, pid) }, patience, 10*time.Millisecond, "process %d still runs", pid)
}

// Each client of a per-client server gets a process of its own and keeps
// it; the host's own calls use the server's own session; one client more
// than max_sessions is refused naming the limit, never the holders; a
// released client frees its place and its process.
func TestPerClientSessions(t *testing.T) {
	m, tl := procManager(t)
	require.NoError(t, m.Add("pc", perClient(t, map[string]any{"max_sessions": 2})))
	home := waitState(t, m, "pc", manager.StateConnected)

	host := whoami(t, m, "")
	a, b := whoami(t, m, "client-a"), whoami(t, m, "client-b")
	require.NotEqual(t, a, b, "two clients share one process")
	require.NotContains(t, []int{a, b}, host, "a client got the server's own session")
	require.Equal(t, a, whoami(t, m, "client-a"), "a client's second call reached another process")
	require.Equal(t, b, whoami(t, m, "client-b"))
	require.Equal(t, host, whoami(t, m, ""))

	_, err := m.Call(context.Background(), "pc.echo", map[string]any{"text": "?"}, manager.CallOptions{Client: "client-c", Timeout: patience})
	me := requireCode(t, err, manager.ErrConnectionLimit, "pc", `tools/call "echo"`)
	require.Contains(t, me.Error(), "max_sessions = 2")
	require.Contains(t, me.Error(), "held by other clients")
	require.NotContains(t, me.Error(), "client-a", "the text goes to client-c: it must not name another client")
	require.NotContains(t, me.Error(), "client-b")
	requireRemedy(t, err, manager.RemedyRetry, "pc")

	st, err := m.Status("pc")
	require.NoError(t, err)
	require.Equal(t, home.PID, st.PID, "the server's own session is unchanged")
	require.Len(t, st.Sessions, 2)
	require.Equal(t, "client-a", st.Sessions[0].Client)
	require.Equal(t, manager.StateConnected, st.Sessions[0].State)
	require.Positive(t, st.Sessions[0].PID)
	require.Equal(t, "client-b", st.Sessions[1].Client)
	mt, err := m.Metrics("pc")
	require.NoError(t, err)
	require.EqualValues(t, 6, mt.Requests, "the clients' calls count in their server's metrics")
	require.Len(t, mt.Sessions, 2)

	m.ReleaseClient("client-a")
	awaitGone(t, a)
	closed := only(tl.until("pc", events.KindSessionClosed, patience), events.KindSessionClosed)
	require.Equal(t, "client-a", closed[0].Fields["client"])
	require.Equal(t, "client left", closed[0].Fields["reason"])
	c := whoami(t, m, "client-c")
	require.NotContains(t, []int{a, b, host}, c)
	require.True(t, running(t, b), "releasing one client stopped another's process")

	remove(t, m, "pc")
	for _, pid := range []int{b, c, host} {
		awaitGone(t, pid)
	}
}

// A client's session that idles out is given back: its process ends and
// the client gets a new one when it calls again.
func TestPerClientSessionIdlesOut(t *testing.T) {
	m, tl := procManager(t)
	require.NoError(t, m.Add("pc", perClient(t, map[string]any{"max_sessions": 1, "timeouts": map[string]any{"idle": "300ms"}})))
	a := whoami(t, m, "client-a")
	evs := tl.until("pc", events.KindSessionClosed, patience)
	require.Equal(t, "idle", only(evs, events.KindSessionClosed)[0].Fields["reason"])
	awaitGone(t, a)
	for _, e := range evs {
		if e.Kind == events.KindConnected && e.Fields["client"] == "client-a" {
			goto opened
		}
	}
	t.Fatalf("no connected event carried the client: %v", kinds(evs))
opened:
	b := whoami(t, m, "client-b") // the one place is free again
	require.NotEqual(t, a, b)
}

func TestSessionSpecFields(t *testing.T) {
	s := perClient(t, nil)
	require.Equal(t, manager.SessionPerClient, s.Session)
	require.Equal(t, 5, s.MaxSessions, "the default limit")
	for _, tc := range []struct {
		raw  map[string]any
		want string
	}{
		{map[string]any{"session": "per-client"}, `session: must be "shared" or "per_client", got "per-client"`},
		{map[string]any{"max_sessions": 3}, `max_sessions: applies only to session = "per_client"`},
		{map[string]any{"session": "per_client", "max_sessions": 0}, "max_sessions: 0 is not a setting"},
		{map[string]any{"roots": []any{"/home/me"}}, `roots[1]: "/home/me" is a path; a root is a file:// URI: "file:///home/me"`},
		{map[string]any{"roots": []any{"file:///a?x=1"}}, `roots[1]: "file:///a?x=1" has a query or fragment`},
	} {
		raw := map[string]any{"command": []any{"x"}}
		for k, v := range tc.raw {
			raw[k] = v
		}
		_, err := config.DecodeSpec("pc", raw, config.DecodeOptions{})
		require.ErrorContains(t, err, tc.want)
	}
}

// A client that goes away mid-call: its call is cut off at once with an
// error saying so, its process stops, its file descriptors are closed, and
// its place is free.
func TestPerClientReleasedMidCall(t *testing.T) {
	m, tl := procManager(t)
	require.NoError(t, m.Add("pc", perClient(t, map[string]any{"max_sessions": 1})))
	waitState(t, m, "pc", manager.StateConnected)
	fds := openFDs(t)
	pid := whoami(t, m, "client-a")
	require.Greater(t, openFDs(t), fds, "a client session holds its process's pipes")
	errc := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "pc.slow", map[string]any{"ms": 60000}, manager.CallOptions{Client: "client-a", Timeout: time.Minute})
		errc <- err
	}()
	require.Eventually(t, func() bool {
		mt, err := m.Metrics("pc")
		return err == nil && mt.InFlight == 1
	}, patience, 5*time.Millisecond)
	m.ReleaseClient("client-a")
	select { // within patience: the call would run a minute
	case err := <-errc:
		require.ErrorIs(t, err, manager.ErrDisconnected)
	case <-time.After(patience):
		t.Fatal("the released client's call still runs")
	}
	awaitGone(t, pid)
	tl.until("pc", events.KindSessionClosed, patience)
	require.Equal(t, fds, openFDs(t), "the released session's descriptors are all closed")
	require.NotEqual(t, pid, whoami(t, m, "client-b"))
}

// A client that calls again right after its session was given back gets
// a new one, never the closing one (which would fail its call).
func TestPerClientCallsAgainAfterRelease(t *testing.T) {
	m, _ := procManager(t)
	require.NoError(t, m.Add("pc", perClient(t, map[string]any{"max_sessions": 2})))
	a := whoami(t, m, "client-a")
	m.ReleaseClient("client-a")
	again := whoami(t, m, "client-a")
	require.NotEqual(t, a, again)
	awaitGone(t, a)
}
