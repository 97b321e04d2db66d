package manager_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
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
	require.NoError(t, syscall.Kill(-st.PID, 0), "the server runs in its own process group")

	tools, err := m.Tools("fake")
	require.NoError(t, err)
	require.Len(t, tools, 2)
	require.Equal(t, "fake.echo", tools[0].FullName)
	require.True(t, tools[0].Available)
	echo(t, m, "fake.echo", "hello")
	echo(t, m, "echo", "bare name")

	remove(t, m, "fake")
	require.ErrorIs(t, syscall.Kill(-st.PID, 0), syscall.ESRCH, "process group %d survived removal", st.PID)
	require.Empty(t, zombies(t))
}

// R-DISC-2: a server that cannot even start never delays another, and its
// status says why.
func TestProcessSpawnFailureIsIsolated(t *testing.T) {
	m, tl := procManager(t)
	start := time.Now()
	// The bad server's retries are spaced 2s apart, so "before its second
	// attempt" leaves a loaded CI machine plenty of room.
	bad := decode(t, map[string]any{"command": []any{"/nonexistent/x", "--flag"},
		"backoff": map[string]any{"initial": "2s", "max": "2s"}})
	require.NoError(t, m.Add("bad", bad))
	require.NoError(t, m.Add("good", fake(t)))

	evs := tl.until("good", events.KindConnected, 5*time.Second)
	require.Less(t, time.Since(start), 5*time.Second)
	for _, e := range only(evs, events.KindConnecting) {
		require.False(t, e.Server == "bad" && e.Fields["attempt"] != 1,
			"the good server connected only after the bad one's second attempt: %v", evs)
	}
	echo(t, m, "good.echo", "unaffected")

	st := waitState(t, m, "bad", manager.StateBackoff)
	require.Contains(t, st.LastError, `server "bad": spawn: `)
	require.Contains(t, st.LastError, "/nonexistent/x")
	require.Contains(t, st.LastError, "no such file or directory")
	require.Equal(t, 1, st.Attempts)
	require.Zero(t, st.PID)
}

// FAULTS #1: a server that crashes after a call is reported with its exit
// status, restarted as a new process, and serves calls again.
func TestProcessCrashRestarts(t *testing.T) {
	m, tl := procManager(t)
	require.NoError(t, m.Add("x", fake(t, "--crash-after=1", "--exit-code=3")))
	first := waitState(t, m, "x", manager.StateConnected)

	echo(t, m, "x.echo", "last words") // answered, then the server exits
	evs := tl.until("x", events.KindDisconnected, patience)
	lost := evs[len(evs)-1].Fields["error"].(string)
	require.Contains(t, lost, "exit status 3")
	require.Contains(t, lost, "fakemcp: crashing", "the last stderr lines say what happened")

	evs = lifecycle(tl.until("x", events.KindConnected, patience))
	require.Equal(t, []events.Kind{events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
	second, err := m.Status("x")
	require.NoError(t, err)
	require.NotEqual(t, first.PID, second.PID, "a new process")
	require.Empty(t, second.LastError)
	echo(t, m, "x.echo", "back")
	require.ErrorIs(t, syscall.Kill(-first.PID, 0), syscall.ESRCH, "the crashed process's group is gone")
}

// R-REQ-2 at the process tier: a call in flight when the process dies fails
// at once, says the call may or may not have run, and is not retried.
func TestProcessCrashDuringCall(t *testing.T) {
	m, _ := procManager(t)
	require.NoError(t, m.Add("x", fake(t, "--hang-tool=slow", "--crash-after=500ms")))
	waitState(t, m, "x", manager.StateConnected)

	start := time.Now()
	_, err := m.Call(context.Background(), "x.slow", map[string]any{"ms": 1}, manager.CallOptions{Timeout: time.Minute})
	requireCode(t, err, manager.ErrInvocationFailed, "x", `tools/call "slow"`)
	require.NotErrorIs(t, err, manager.ErrTimeout)
	require.Contains(t, err.Error(), "it may or may not have run")
	require.Less(t, time.Since(start), patience, "not held until the call's timeout")
}

// R-REQ-5: a process that dies during connect is reported with its exit
// status and its last stderr lines.
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

// FAULTS #12: a grandchild in the server's process group dies with it.
func TestProcessGrandchildIsKilled(t *testing.T) {
	m, _ := procManager(t)
	pidfile := filepath.Join(t.TempDir(), "pid")
	require.NoError(t, m.Add("x", fake(t, "--spawn-grandchild", "--pidfile="+pidfile)))
	st := waitState(t, m, "x", manager.StateConnected)

	b, err := os.ReadFile(pidfile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.Equal(t, pid, st.PID, "Status.PID is the server process")
	require.Len(t, groupRunning(t, pid), 2, "server and grandchild run in the server's group")

	remove(t, m, "x")
	requireGroupGone(t, pid)
}

// FAULTS #11: a server that ignores both stdin EOF and SIGTERM is killed
// after two grace periods, with its group.
func TestProcessIgnoringSigtermIsKilled(t *testing.T) {
	m, _ := procManager(t)
	require.NoError(t, m.Add("x", fake(t, "--ignore-sigterm", "--no-exit-on-stdin-eof", "--spawn-grandchild")))
	st := waitState(t, m, "x", manager.StateConnected)

	took := remove(t, m, "x")
	require.GreaterOrEqual(t, took, 2*stopGrace, "stdin close and SIGTERM each get their grace")
	require.Less(t, took, 3*stopGrace+stopGrace/2, "then SIGKILL ends it")
	requireGroupGone(t, st.PID)
}

// FAULTS #10: a server that writes a lot to stderr never blocks: the host
// drains it.
func TestProcessStderrFlood(t *testing.T) {
	m, _ := procManager(t)
	require.NoError(t, m.Add("x", fake(t, "--stderr-flood=256KiB")))
	waitState(t, m, "x", manager.StateConnected)
	for i := range 5 {
		echo(t, m, "x.echo", "call "+strconv.Itoa(i)) // 1.25 MiB of stderr in all
	}
}

// FAULTS #16: a hung tool call times out, the server is told
// (notifications/cancelled for that request id), and the session stays
// usable.
func TestProcessHungToolIsCancelled(t *testing.T) {
	m, _ := procManager(t)
	record := filepath.Join(t.TempDir(), "record")
	require.NoError(t, m.Add("x", fake(t, "--hang-tool=slow", "--record="+record)))
	waitState(t, m, "x", manager.StateConnected)

	start := time.Now()
	_, err := m.Call(context.Background(), "x.slow", map[string]any{"ms": 1}, manager.CallOptions{Timeout: 300 * ms})
	took := time.Since(start)
	requireCode(t, err, manager.ErrInvocationFailed, "x", `tools/call "slow"`)
	require.ErrorIs(t, err, manager.ErrTimeout)
	require.EqualError(t, err, `server "x": tools/call "slow": timeout after 300ms`)
	require.GreaterOrEqual(t, took, 300*ms)
	require.Less(t, took, 2*time.Second)

	b, err := os.ReadFile(record)
	require.NoError(t, err)
	call := regexp.MustCompile(`(?m)^tools/call id=(\S+)$`).FindStringSubmatch(string(b))
	require.NotNil(t, call, "record:\n%s", b)
	// The SDK sends the cancellation off the caller's path; the file is the
	// only witness, so poll it briefly.
	want := "notifications/cancelled requestId=" + call[1]
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(record)
		return err == nil && strings.Contains(string(b), want+"\n")
	}, 5*time.Second, 10*time.Millisecond, "the server is told which request was cancelled")

	echo(t, m, "x.echo", "still usable")
	require.Equal(t, manager.StateConnected, mustStatus(t, m, "x").State)
}

// R-DISP: Close disposes every server in parallel and leaves no process.
func TestProcessCloseDisposesAll(t *testing.T) {
	if testing.Short() {
		t.Skip("process tier")
	}
	noZombies(t)
	m := manager.New(manager.Options{StopGrace: stopGrace})
	var pgids []int
	for _, name := range []string{"a", "b", "c"} {
		flags := []string{"--name=" + name}
		if name == "c" {
			flags = append(flags, "--ignore-sigterm", "--no-exit-on-stdin-eof")
		}
		require.NoError(t, m.Add(name, fake(t, flags...)))
	}
	for _, name := range []string{"a", "b", "c"} {
		pgids = append(pgids, waitState(t, m, name, manager.StateConnected).PID)
	}

	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	start := time.Now()
	require.NoError(t, m.Close(ctx))
	require.Less(t, time.Since(start), 3*stopGrace+stopGrace/2, "servers are disposed in parallel")
	for _, pgid := range pgids {
		require.ErrorIs(t, syscall.Kill(-pgid, 0), syscall.ESRCH, "process group %d survived Close", pgid)
	}
	require.Empty(t, m.Names())
	require.Empty(t, zombies(t))
}
