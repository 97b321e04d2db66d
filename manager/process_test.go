package manager_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/manager"
)

// The process tier runs real fakemcp processes in real time. Waits are on
// events, states and disposal channels with generous deadlines. The only
// polling is for what cannot be waited on: a grandchild's death and a file
// the server writes.

const (
	stopGrace = 200 * time.Millisecond
	patience  = 10 * time.Second // upper bound of any wait that should be quick
)

// procManager returns a manager for real processes whose disposal is
// checked when the test ends: closed cleanly, no zombie left.
func procManager(t *testing.T) (*manager.Manager, *timeline) {
	t.Helper()
	if testing.Short() {
		t.Skip("process tier")
	}
	noZombies(t) // registered first, so it runs after the manager is closed
	m := newManager(t, manager.Options{StopGrace: stopGrace})
	return m, watch(t, m)
}

// fake declares fakemcp with flags the way a user would.
func fake(t *testing.T, flags ...string) manager.Spec {
	t.Helper()
	cmd := []any{fakemcptest.Build(t)}
	for _, f := range flags {
		cmd = append(cmd, f)
	}
	return decode(t, map[string]any{"command": cmd})
}

func waitState(t *testing.T, m *manager.Manager, name string, state manager.State) manager.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	st, err := m.Wait(ctx, name, state)
	require.NoError(t, err)
	return st
}

// remove removes a server and waits for its disposal to complete.
func remove(t *testing.T, m *manager.Manager, name string) time.Duration {
	t.Helper()
	start := time.Now()
	done, err := m.Remove(name)
	require.NoError(t, err)
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("server %q not disposed within %s", name, patience)
	}
	return time.Since(start)
}

func echo(t *testing.T, m *manager.Manager, tool, msg string) {
	t.Helper()
	res, err := m.Call(context.Background(), tool, map[string]any{"text": msg}, manager.CallOptions{Timeout: patience})
	require.NoError(t, err)
	require.Equal(t, msg, text(t, res))
}

// The happy path with a real process: connect, discover, call, and after
// removal the whole process group is gone and reaped (invariant Z).
func TestProcessLifecycle(t *testing.T) {
	m, _ := procManager(t)
	require.NoError(t, m.Add("fake", fake(t, "--name=fake-one")))
	st := waitState(t, m, "fake", manager.StateConnected)
	require.Positive(t, st.PID)
	require.Equal(t, "fake-one", st.ServerName)
	require.Equal(t, "0.0.0-fake", st.ServerVersion)
	require.Equal(t, "2025-11-25", st.Protocol, "fakemcp answers the client's initialize version")
	require.Equal(t, 2, st.Tools)
	require.NoError(t, signal(-st.PID, 0), "the server runs in its own process group")

	tools, err := m.Tools("fake")
	require.NoError(t, err)
	require.Len(t, tools, 2)
	require.Equal(t, "fake.echo", tools[0].FullName)
	require.True(t, tools[0].Available)
	echo(t, m, "fake.echo", "hello")
	echo(t, m, "echo", "bare name")

	remove(t, m, "fake")
	require.ErrorIs(t, signal(-st.PID, 0), syscall.ESRCH, "process group %d survived removal", st.PID)
	require.Empty(t, zombies(t))
}

// A server that cannot even start never delays another, and its status says
// why.
func TestProcessSpawnFailureIsIsolated(t *testing.T) {
	m, tl := procManager(t)
	// Were the bad server retried, it would be an hour later: the good one
	// connecting within patience, before any second attempt, is not held
	// up by it.
	bad := decode(t, map[string]any{"command": []any{"/nonexistent/x", "--flag"},
		"backoff": map[string]any{"initial": "1h", "max": "1h"}})
	require.NoError(t, m.Add("bad", bad))
	require.NoError(t, m.Add("good", fake(t)))

	evs := tl.until("good", events.KindConnected, patience)
	for _, e := range only(evs, events.KindConnecting) {
		require.False(t, e.Server == "bad" && e.Fields["attempt"] != 1,
			"the good server connected only after the bad one's second attempt: %v", evs)
	}
	echo(t, m, "good.echo", "unaffected")

	st := waitState(t, m, "bad", manager.StateFailed)
	require.Contains(t, st.LastError, `server "bad": spawn: `)
	require.Contains(t, st.LastError, `program "/nonexistent/x" does not exist`)
	require.Equal(t, 1, st.Attempts)
	require.Zero(t, st.PID)
}

// A process that dies during connect is reported with its exit status and
// its last stderr lines.
func TestProcessExitDuringConnect(t *testing.T) {
	m, tl := procManager(t)
	spec := decode(t, map[string]any{"command": []any{"sh", "-c", "echo starting >&2; echo oops, no config >&2; exit 1"}})
	require.NoError(t, m.Add("x", spec))
	evs := tl.until("x", events.KindBackoff, patience)
	msg := evs[len(evs)-1].Fields["error"].(string)
	require.Regexp(t, `^server "x": \S+: `, msg, "names server and operation")
	require.Contains(t, msg, "exit status 1")
	require.Contains(t, msg, "starting | oops, no config")

	st, err := m.Status("x")
	require.NoError(t, err)
	require.Contains(t, st.LastError, "oops, no config")
}

// Close disposes every server in parallel and leaves no process. Each of
// the three ignores stdin EOF and SIGTERM, so stopping one takes two graces
// of 2s: one after another they would take 12s, more than the 10s that
// Close is given.
func TestProcessCloseDisposesAll(t *testing.T) {
	if testing.Short() {
		t.Skip("process tier")
	}
	const grace = 2 * time.Second
	noZombies(t)
	m := manager.New(manager.Options{StopGrace: grace})
	var pgids []int
	for _, name := range []string{"a", "b", "c"} {
		require.NoError(t, m.Add(name, fake(t, "--name="+name, "--ignore-sigterm", "--no-exit-on-stdin-eof")))
	}
	for _, name := range []string{"a", "b", "c"} {
		pgids = append(pgids, waitState(t, m, name, manager.StateConnected).PID)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*2*grace-2*time.Second)
	defer cancel()
	require.NoError(t, m.Close(ctx), "servers are disposed in parallel")
	for _, pgid := range pgids {
		require.ErrorIs(t, signal(-pgid, 0), syscall.ESRCH, "process group %d survived Close", pgid)
	}
	require.Empty(t, m.Names())
	require.Empty(t, zombies(t))
}
