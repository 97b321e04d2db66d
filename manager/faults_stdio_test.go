package manager_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Stdio process faults, and single-flight connects with mixed deadlines,
// against real fakemcp processes. Each case ends with the invariants of
// invariants_test.go.

// quick are spec fields that keep a case fast: reconnects after 10ms, 20ms, …
// (no jitter: faultManager pins it), and a backoff.max long enough that no
// session in a test counts as having proven itself.
func quick(extra map[string]any) map[string]any {
	raw := map[string]any{
		"timeouts": map[string]any{"connect": "5s", "request": "5s"},
		"backoff":  map[string]any{"initial": "10ms", "max": "10s"},
	}
	for k, v := range extra {
		raw[k] = v
	}
	return raw
}

// call calls a tool with a timeout and returns its text.
func (f *faultRun) call(tool string, args map[string]any, timeout time.Duration) (string, error) {
	f.t.Helper()
	res, err := f.m.Call(context.Background(), tool, args, manager.CallOptions{Timeout: timeout})
	if err != nil {
		return "", err
	}
	return text(f.t, res), nil
}

// echoOK calls tool with text msg and requires msg back.
func (f *faultRun) echoOK(tool, msg string) {
	f.t.Helper()
	got, err := f.call(tool, map[string]any{"text": msg}, patience)
	require.NoError(f.t, err)
	require.Equal(f.t, msg, got)
}

// goCall starts a call in the background; the channel yields its error.
func (f *faultRun) goCall(tool string, args map[string]any, timeout time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := f.m.Call(context.Background(), tool, args, manager.CallOptions{Timeout: timeout})
		done <- err
	}()
	return done
}

// awaitRecord waits until fakemcp's --record file has at least n lines
// matching re. The file is the only witness of what the server received,
// so this polls it.
func awaitRecord(t *testing.T, path string, re *regexp.Regexp, n int) []string {
	t.Helper()
	var got []string
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(path)
		got = re.FindAllString(string(b), -1)
		return len(got) >= n
	}, patience, 5*time.Millisecond, "%d lines matching %s in %s", n, re, path)
	return got
}

var toolCallLine = regexp.MustCompile(`(?m)^tools/call id=\S+$`)

// A server that crashes mid-session. The call in flight fails at once with
// the exit status; the server is restarted as a new process with connected
// → disconnected → backoff → connecting → connected; and since each session
// dies long before backoff.max, the schedule keeps growing instead of
// resetting (the crash-loop rule).
func TestStdioCrashMidSession(t *testing.T) {
	f := faultManager(t, manager.Options{})
	record := filepath.Join(t.TempDir(), "record")
	spec := f.fakeIn(quick(nil), "--crash-after=3", "--exit-code=3", "--hang-tool=slow", "--record="+record)
	require.NoError(t, f.m.Add("x", spec))
	f.until("x", events.KindConnected, patience)

	f.echoOK("x.echo", "one")
	f.echoOK("x.echo", "two")
	slow := f.goCall("x.slow", map[string]any{"ms": 1}, time.Minute)
	awaitRecord(t, record, toolCallLine, 3) // the slow call reached the server
	f.echoOK("x.echo", "last words")        // the third answer; then it exits 3

	err := <-slow
	requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "slow"`, manager.ErrDisconnected)
	require.NotErrorIs(t, err, manager.ErrTimeout)
	require.Contains(t, err.Error(), "exit status 3")
	require.Contains(t, err.Error(), "it may or may not have run")

	evs := lifecycle(f.until("x", events.KindConnected, patience))
	require.Equal(t, []events.Kind{events.KindDisconnected, events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
	lost := evs[0].Fields["error"].(string)
	require.True(t, strings.HasPrefix(lost, `server "x": session: process exited (exit status 3)`), lost)
	require.Contains(t, lost, "fakemcp: crashing", "the last stderr lines say what happened")
	require.EqualValues(t, 1, evs[1].Fields["attempt"])
	require.EqualValues(t, 20, evs[1].Fields["delay_ms"], "lost before proving itself: one step further on the schedule")
	require.EqualValues(t, 2, evs[2].Fields["attempt"])

	pids := f.pids(spec)
	require.Len(t, pids, 2, "one new process")
	require.Equal(t, pids[1], mustStatus(t, f.m, "x").PID)
	require.Empty(t, mustStatus(t, f.m, "x").LastError)
	requireGroupGone(t, pids[0])

	// The new process crashes after three calls too: a session that lived
	// far less than backoff.max does not reset the schedule.
	for i := range 3 {
		f.echoOK("x.echo", "again "+strconv.Itoa(i))
	}
	evs = lifecycle(f.until("x", events.KindConnected, patience))
	require.Equal(t, []events.Kind{events.KindDisconnected, events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
	require.EqualValues(t, 2, evs[1].Fields["attempt"], "the failure count carries over")
	require.EqualValues(t, 40, evs[1].Fields["delay_ms"], "20ms, then 40ms: not reset by the handshake in between")
	f.echoOK("x.echo", "third process")
}

// A server that cannot be spawned (a program or working directory that is
// not there) fails at once, naming server, operation, what is missing and
// the fix, and is not retried: a missing program does not appear within a
// backoff schedule, and each retry would repeat the same warning. It
// leaves no process, and a reconnect tries again.
func TestStdioSpawnFailure(t *testing.T) {
	notExecutable := filepath.Join(t.TempDir(), "server.sh")
	require.NoError(t, os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644))
	tests := []struct {
		name string
		raw  map[string]any // command, cwd
		want string         // the error, after `server "x": spawn: `
	}{
		{
			name: "not found",
			raw:  map[string]any{"command": []any{"no-such-mcp-server-x7"}},
			want: `program "no-such-mcp-server-x7" not found on PATH; install it, or give its full path as the first element of command`,
		},
		{
			name: "not executable",
			raw:  map[string]any{"command": []any{notExecutable}},
			want: `program "` + notExecutable + `" is not an executable file; name the program itself (chmod +x if it is a script)`,
		},
		{
			name: "bad cwd",
			raw:  map[string]any{"command": []any{"/bin/true"}, "cwd": "/nonexistent/dir"},
			want: `working directory "/nonexistent/dir" does not exist; create it or correct cwd`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := faultManager(t, manager.Options{})
			require.NoError(t, f.m.Add("x", decode(t, tt.raw)))
			evs := lifecycle(f.until("x", events.KindFailed, patience))
			require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindFailed}, kinds(evs))
			want := `server "x": spawn: ` + tt.want + " (not retried)"
			require.Equal(t, want, evs[2].Fields["error"])

			st := mustStatus(t, f.m, "x")
			require.Equal(t, manager.StateFailed, st.State)
			require.Equal(t, want, st.LastError)
			require.Equal(t, "fix_declaration", evs[2].Fields["remedy"])
			require.Zero(t, st.PID)
			_, err := f.call("x.echo", nil, time.Second)
			requireFault(t, err, manager.ErrConnectionFailed, "x", `tools/call "echo"`)
			require.Contains(t, err.Error(), tt.want)
			requireRemedy(t, err, manager.RemedyFixDeclaration, "x")
			require.ErrorIs(t, err, manager.ErrCannotStart)
			require.NotErrorIs(t, err, manager.ErrUnauthorized)

			require.NoError(t, f.m.Reconnect("x"))
			evs = lifecycle(f.until("x", events.KindFailed, patience))
			require.Equal(t, events.KindConnecting, evs[len(evs)-2].Kind, "a reconnect tries again: %v", kinds(evs))
		})
	}
}

// A server that never answers initialize fails its attempt at the connect
// timeout as CONNECTION_TIMEOUT — reported then, while its process is still
// being stopped — its whole process group is killed (it ignores stdin EOF
// and SIGTERM and has a grandchild), and the next attempt follows on the
// backoff schedule.
func TestStdioHangInitialize(t *testing.T) {
	const grace = 2 * time.Second // stdin, then SIGTERM: 4s to stop this one
	f := faultManager(t, manager.Options{StopGrace: grace})
	spec := f.fakeIn(quick(map[string]any{"timeouts": map[string]any{"connect": "300ms"}}),
		"--hang-initialize", "--no-exit-on-stdin-eof", "--ignore-sigterm", "--spawn-grandchild")
	require.NoError(t, f.m.Add("x", spec))

	evs := lifecycle(f.until("x", events.KindBackoff, patience))
	require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindBackoff}, kinds(evs))
	require.Equal(t, `server "x": initialize: timeout after 300ms`, evs[2].Fields["error"])
	require.GreaterOrEqual(t, evs[2].At, 300*ms, "not before the connect timeout")
	// The process writes its pid once it runs, which on a busy machine may
	// be after the timeout. Only SIGKILL, two graces after the timeout,
	// stops it: the timeout was reported before that.
	require.Eventually(t, func() bool { return len(f.pids(spec)) > 0 }, patience, 10*ms, "no pid written")
	pids := f.pids(spec)
	require.NotEmpty(t, groupRunning(t, pids[0]), "the timeout was reported only once the process was stopped")

	evs = lifecycle(f.until("x", events.KindBackoff, patience))
	require.Equal(t, []events.Kind{events.KindConnecting, events.KindBackoff}, kinds(evs))
	require.EqualValues(t, 2, evs[0].Fields["attempt"])
	require.EqualValues(t, 20, evs[1].Fields["delay_ms"])

	// A caller waiting meanwhile gets its own timeout, with the reason.
	_, err := f.call("x.echo", map[string]any{"text": "?"}, 200*ms)
	requireFault(t, err, manager.ErrConnectionFailed, "x", `tools/call "echo"`, manager.ErrTimeout)
	require.Contains(t, err.Error(), `(last error: server "x": initialize: timeout after 300ms): timeout after 200ms`)

	require.Eventually(t, func() bool { return len(groupRunning(t, pids[0])) == 0 }, 2*grace+2*time.Second, 10*ms,
		"the timed-out attempt's process group is stopped in the background")
}

// A server that prints a banner on stdout before initialize fails its
// attempts with a protocol error quoting the start of the line, on the
// backoff schedule (no retry storm).
func TestStdioGarbageBeforeInit(t *testing.T) {
	f := faultManager(t, manager.Options{})
	spec := f.fakeIn(quick(map[string]any{"max_retries": 2}), "--garbage-stdout=before-init")
	require.NoError(t, f.m.Add("x", spec))

	evs := lifecycle(f.until("x", events.KindFailed, patience))
	want := `server "x": initialize: protocol error: invalid character 'S' looking for beginning of value in stdout line "Starting server..."`
	var delays []int64
	for _, e := range only(evs, events.KindBackoff) {
		require.Equal(t, want, e.Fields["error"])
		delays = append(delays, e.Fields["delay_ms"].(int64))
	}
	require.Equal(t, []int64{10, 20}, delays, "each failure counts")
	require.Len(t, only(evs, events.KindConnecting), 3)
	require.Len(t, f.pids(spec), 3, "one process per attempt")

	_, err := f.call("x.echo", map[string]any{"text": "?"}, time.Second)
	requireFault(t, err, manager.ErrConnectionFailed, "x", `tools/call "echo"`)
	require.Contains(t, err.Error(), "gave up after 3 attempts: "+want)
}

// The quote of the offending line is bounded and shows what is invisible.
func TestStdioGarbageLineIsTruncated(t *testing.T) {
	f := faultManager(t, manager.Options{})
	banner := "\x1b[1mWelcome\x1b[0m " + strings.Repeat("=", 200)
	spec := decode(t, quick(map[string]any{
		"command":     []any{"/bin/sh", "-c", `printf '%s\n' "$0"; exec cat >/dev/null`, banner},
		"max_retries": 0,
	}))
	require.NoError(t, f.m.Add("x", spec))
	evs := lifecycle(f.until("x", events.KindFailed, patience))
	msg := evs[len(evs)-1].Fields["error"].(string)
	quoted := strconv.Quote(banner[:80])
	require.Contains(t, msg, `protocol error: invalid character '\x1b' looking for beginning of value in stdout line `+quoted+"…")
}

// Garbage on stdout in the middle of a session ends it (the SDK cannot
// resynchronise, go-sdk #1209): the call in flight fails with the protocol
// error, and the server reconnects.
func TestStdioGarbageMidSession(t *testing.T) {
	f := faultManager(t, manager.Options{})
	record := filepath.Join(t.TempDir(), "record")
	spec := f.fakeIn(quick(nil), "--garbage-stdout=after-init", "--hang-tool=slow", "--record="+record)
	require.NoError(t, f.m.Add("x", spec))
	f.until("x", events.KindConnected, patience)

	slow := f.goCall("x.slow", map[string]any{"ms": 1}, time.Minute)
	awaitRecord(t, record, toolCallLine, 1)
	f.echoOK("x.echo", "answered, then garbage")

	garbage := `protocol error: invalid character 'S' looking for beginning of value in stdout line "Starting server..."`
	err := <-slow
	requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "slow"`, manager.ErrDisconnected)
	require.NotErrorIs(t, err, manager.ErrTimeout)
	require.Contains(t, err.Error(), garbage)
	require.Equal(t, 1, strings.Count(err.Error(), "it may or may not have run"), "said once: %s", err)

	evs := lifecycle(f.until("x", events.KindConnected, patience))
	require.Equal(t, []events.Kind{events.KindDisconnected, events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
	require.Equal(t, `server "x": session: `+garbage, evs[0].Fields["error"])
	f.echoOK("x.echo", "a new session")
	require.Len(t, f.pids(spec), 2)
}

// A frame over max_frame_bytes ends the session as a protocol error that
// names the cap; the partial frame does not stay in memory (the heap
// returns to within 2× the cap of its baseline).
func TestStdioOversizeFrame(t *testing.T) {
	f := faultManager(t, manager.Options{})
	const limit = 1 << 20
	f.heapSlack = 2 * limit
	spec := f.fakeIn(quick(map[string]any{"max_frame_bytes": limit}), "--huge-message=20MiB")
	require.NoError(t, f.m.Add("x", spec))
	f.until("x", events.KindConnected, patience)

	frame := "protocol error: frame exceeded the maximum line length of 1048576 bytes (max_frame_bytes)"
	_, err := f.call("x.echo", map[string]any{"text": "big"}, patience)
	requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "echo"`, manager.ErrDisconnected)
	require.NotErrorIs(t, err, manager.ErrTimeout)
	require.Contains(t, err.Error(), frame)

	evs := lifecycle(f.until("x", events.KindConnected, patience))
	require.Equal(t, []events.Kind{events.KindDisconnected, events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
	require.Equal(t, `server "x": session: `+frame, evs[0].Fields["error"],
		"the host stopped the process because of the frame; its exit status is no news")
	pids := f.pids(spec)
	require.Len(t, pids, 2)
	requireGroupGone(t, pids[0]) // it was blocked writing the rest of the frame
}

// A server that writes half a frame and stalls. The call times out at its
// own timeout, and so does the next one (the stream is wedged); nothing
// accumulates meanwhile.
func TestStdioPartialFrame(t *testing.T) {
	f := faultManager(t, manager.Options{})
	spec := f.fakeIn(quick(nil), "--partial-frame")
	require.NoError(t, f.m.Add("x", spec))
	f.until("x", events.KindConnected, patience)

	for i := range 2 {
		start := time.Now()
		_, err := f.call("x.echo", map[string]any{"text": strconv.Itoa(i)}, 300*ms)
		took := time.Since(start)
		requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "echo"`, manager.ErrTimeout)
		// Its own timeout ended it (the error names it), not before.
		require.EqualError(t, err, `server "x": tools/call "echo": timeout after 300ms`)
		require.GreaterOrEqual(t, took, 300*ms)
	}
}

// Half a frame, continued: the health ping shares the wedged stream, times
// out, and the server is reconnected as a new process.
func TestStdioPartialFrameHealthReconnects(t *testing.T) {
	f := faultManager(t, manager.Options{})
	spec := f.fakeIn(quick(map[string]any{"timeouts": map[string]any{
		"connect": "5s", "request": "5s", "health_interval": "1s", "health_timeout": "300ms",
	}}), "--partial-frame")
	require.NoError(t, f.m.Add("x", spec))
	f.until("x", events.KindConnected, patience)
	_, err := f.call("x.echo", map[string]any{"text": "stalls"}, 300*ms)
	requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "echo"`, manager.ErrTimeout)

	evs := lifecycle(f.until("x", events.KindConnected, patience))
	require.Equal(t, []events.Kind{events.KindHealthFailed, events.KindDisconnected, events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
	require.Contains(t, evs[0].Fields["error"], "timeout after 300ms")
	require.Len(t, f.pids(spec), 2, "a new process")
}

// Invalid UTF-8 inside a JSON string. Pinned: it is no protocol error; each
// invalid byte decodes as U+FFFD (encoding/json's rule) and the session
// continues.
func TestStdioInvalidUTF8(t *testing.T) {
	f := faultManager(t, manager.Options{})
	require.NoError(t, f.m.Add("x", f.fakeIn(quick(nil), "--invalid-utf8")))
	f.until("x", events.KindConnected, patience)

	for range 2 {
		got, err := f.call("x.echo", map[string]any{"text": "hi"}, patience)
		require.NoError(t, err)
		require.Equal(t, "hi\uFFFD\uFFFD\uFFFD(", got, `fakemcp appends the bytes ff fe c3 28`)
	}
	st := mustStatus(t, f.m, "x")
	require.Equal(t, manager.StateConnected, st.State)
	require.Equal(t, 1, len(f.pids(f.specOf("x"))), "the same process throughout")
}

// specOf returns the spec a server was declared with.
func (f *faultRun) specOf(name string) manager.Spec {
	f.t.Helper()
	s, err := f.m.Spec(name)
	require.NoError(f.t, err)
	return s
}

// A server that floods stderr is always drained, so its calls succeed; what
// is kept is bounded (the last 64 KiB, and at most 100 log lines a second).
// The negative control shows that the flood does block a server whose
// stderr nobody reads.
func TestStdioStderrFlood(t *testing.T) {
	t.Run("per request", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		require.NoError(t, f.m.Add("x", f.fakeIn(quick(nil), "--stderr-flood=256KiB")))
		f.until("x", events.KindConnected, patience)
		for i := range 5 {
			f.echoOK("x.echo", "call "+strconv.Itoa(i)) // 1.25 MiB of stderr in all, 20× the pipe
		}
	})
	t.Run("continuous", func(t *testing.T) {
		var logs testutil.SyncBuffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		f := faultManager(t, manager.Options{Logger: logger})
		start := time.Now()
		require.NoError(t, f.m.Add("x", f.fakeIn(quick(nil), "--stderr-flood=continuous")))
		st := waitState(t, f.m, "x", manager.StateConnected)
		// Calls go on until the flood has written more than the kept
		// 64 KiB many times over: how fast it writes is the machine's
		// load, so a fixed number of calls may come before it has.
		var written int64
		deadline := time.Now().Add(patience)
		for i := 0; i < 20 || written <= 1<<20; i++ {
			require.True(t, time.Now().Before(deadline), "the flood ran (%d bytes of stderr written, want more than 1 MiB)", written)
			f.echoOK("x.echo", "call "+strconv.Itoa(i))
			written = stderrWritten(t, st.PID)
		}

		remove(t, f.m, "x") // stops the flood and the drain
		lines := strings.Count(logs.String(), `msg="server stderr"`)
		secs := int(time.Since(start)/time.Second) + 1
		require.LessOrEqual(t, lines, 100*secs, "stderr log lines are rate-limited (%d bytes written)", written)
		require.Contains(t, logs.String(), `msg="server stderr lines suppressed" server=x`)
		t.Logf("%d bytes of stderr, %d lines logged over %d s", written, lines, secs)
	})
	t.Run("undrained (negative control)", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close() // unblocks the server if it is still writing
		cmd := exec.Command(f.bin, "--stderr-flood=256KiB")
		cmd.Stderr = w // a pipe nobody reads
		tr := &mcp.CommandTransport{Command: cmd, TerminateDuration: stopGrace}
		client := mcp.NewClient(&mcp.Implementation{Name: "control"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		cs, err := client.Connect(context.Background(), tr, nil)
		w.Close()
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 300*ms)
		defer cancel()
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
		require.ErrorIs(t, err, context.DeadlineExceeded, "the server is stuck writing stderr")
		r.Close()
		_ = cs.Close()
	})
}

// stderrWritten returns how many bytes process pid has written in all
// (/proc/PID/io wchar; its stdout share is small).
func stderrWritten(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^wchar: (\d+)$`).FindSubmatch(b)
	require.NotNil(t, m, "%s", b)
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	require.NoError(t, err)
	return n
}

// Disposal of a server closes its stdin, sends SIGTERM a grace later and
// SIGKILL another grace later, to its whole group, and is done as soon as
// the server is: one that exits on stdin EOF is disposed of at once even
// with a grace of an hour; one that ignores EOF and SIGTERM is killed. The
// group (here with a grandchild) goes with it.
func TestStdioIgnoresSigterm(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		grace time.Duration
		min   time.Duration // the graces it must wait out
	}{
		{"exits on stdin EOF", []string{"--ignore-sigterm"}, time.Hour, 0},
		{"exits on SIGTERM", []string{"--no-exit-on-stdin-eof"}, stopGrace, stopGrace},
		{"ignores both", []string{"--no-exit-on-stdin-eof", "--ignore-sigterm"}, stopGrace, 2 * stopGrace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := faultManager(t, manager.Options{StopGrace: tt.grace})
			require.NoError(t, f.m.Add("x", f.fakeIn(quick(nil), append(tt.flags, "--spawn-grandchild")...)))
			st := waitState(t, f.m, "x", manager.StateConnected)

			took := remove(t, f.m, "x") // fails if not done within patience
			require.GreaterOrEqual(t, took, tt.min)
			require.ErrorIs(t, signal(st.PID, 0), syscall.ESRCH, "the server is reaped")
			requireGroupGone(t, st.PID)
		})
	}
}

// A grandchild in the server's process group dies with it. The control
// shows that the SDK's CommandTransport (which signals only its child)
// leaves it running.
func TestStdioGrandchildDiesWithGroup(t *testing.T) {
	t.Run("manager", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		spec := f.fakeIn(quick(nil), "--spawn-grandchild")
		require.NoError(t, f.m.Add("x", spec))
		st := waitState(t, f.m, "x", manager.StateConnected)
		require.Equal(t, f.pids(spec), []int{st.PID}, "Status.PID is the server process")
		require.Len(t, groupRunning(t, st.PID), 2, "server and grandchild run in the server's group")

		remove(t, f.m, "x")
		requireGroupGone(t, st.PID)
	})
	t.Run("CommandTransport (control)", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		var stderr testutil.SyncBuffer
		cmd := exec.Command(f.bin, "--spawn-grandchild")
		cmd.Stderr = &stderr
		client := mcp.NewClient(&mcp.Implementation{Name: "control"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: stopGrace}, nil)
		require.NoError(t, err)
		require.NoError(t, cs.Close())
		m := regexp.MustCompile(`grandchild pid=(\d+)`).FindStringSubmatch(stderr.String())
		require.NotNil(t, m, "stderr: %s", stderr.String())
		pid, _ := strconv.Atoi(m[1])
		alive := signal(pid, 0) == nil && !isZombie(t, pid)
		_ = signal(pid, syscall.SIGKILL) // not ours to leave behind
		require.True(t, alive, "CommandTransport.Close left the grandchild %d running", pid)
	})
}

func isZombie(t *testing.T, pid int) bool {
	for _, p := range readProcs(t) {
		if p.pid == pid {
			return p.state == 'Z'
		}
	}
	return true // gone
}

// A hung tool call times out at the caller's timeout, the server is told
// (notifications/cancelled for that request id), and the session serves
// other calls meanwhile and afterwards.
func TestStdioToolHangs(t *testing.T) {
	f := faultManager(t, manager.Options{})
	record := filepath.Join(t.TempDir(), "record")
	require.NoError(t, f.m.Add("x", f.fakeIn(quick(nil), "--hang-tool=slow", "--record="+record)))
	f.until("x", events.KindConnected, patience)

	start := time.Now()
	hung := f.goCall("x.slow", map[string]any{"ms": 1}, 500*ms)
	awaitRecord(t, record, toolCallLine, 1)
	f.echoOK("x.echo", "while the other hangs")

	err := <-hung
	took := time.Since(start)
	requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "slow"`, manager.ErrTimeout)
	require.EqualError(t, err, `server "x": tools/call "slow": timeout after 500ms`)
	require.GreaterOrEqual(t, took, 500*ms)

	b, err := os.ReadFile(record)
	require.NoError(t, err)
	call := regexp.MustCompile(`(?m)^tools/call id=(\S+)$`).FindStringSubmatch(string(b))
	require.NotNil(t, call, "record:\n%s", b)
	// The SDK sends the cancellation off the caller's path.
	awaitRecord(t, record, regexp.MustCompile(`(?m)^notifications/cancelled requestId=`+regexp.QuoteMeta(call[1])+`$`), 1)

	f.echoOK("x.echo", "still usable")
	require.Equal(t, manager.StateConnected, mustStatus(t, f.m, "x").State)
}

// Responses with duplicate or unsolicited ids. Pinned: the session
// continues; each caller gets its own answer; the stray response is dropped
// and logged as a protocol error with the server's name.
func TestStdioDuplicateResponseIDs(t *testing.T) {
	for _, flag := range []string{"--dup-response-id", "--unsolicited-response"} {
		t.Run(strings.TrimPrefix(flag, "--"), func(t *testing.T) {
			var logs testutil.SyncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			f := faultManager(t, manager.Options{Logger: logger})
			require.NoError(t, f.m.Add("x", f.fakeIn(quick(nil), flag)))
			f.until("x", events.KindConnected, patience)

			var wg sync.WaitGroup
			for i := range 20 {
				wg.Go(func() {
					msg := "caller " + strconv.Itoa(i)
					got, err := f.call("x.echo", map[string]any{"text": msg}, patience)
					if err == nil && got != msg {
						err = fmt.Errorf("got %q", got)
					}
					require.NoError(t, err, msg)
				})
			}
			wg.Wait()

			require.Equal(t, manager.StateConnected, mustStatus(t, f.m, "x").State)
			require.Len(t, f.pids(f.specOf("x")), 1, "no restart")
			out := logs.String()
			require.Contains(t, out, `level=WARN msg="protocol error: response to no request in flight (duplicate or unsolicited id); dropped" server=x`)
			require.LessOrEqual(t, strings.Count(out, "\n"), 6, "a stream of strays is logged sparsely:\n%s", out)
		})
	}
}

// Single-flight at the process tier: two callers arrive while the one
// connect attempt (1s: a slow initialize) is in progress. The one with a
// 100ms budget gets its own CONNECTION_TIMEOUT at 100ms without cancelling
// the attempt; the other is served when it completes; one process, one
// initialize. (TestCallsWaitForTheSingleConnectAttempt pins the exact
// timeline at the logic tier.)
func TestProcessSingleFlightMixedDeadlines(t *testing.T) {
	f := faultManager(t, manager.Options{})
	record := filepath.Join(t.TempDir(), "record")
	spec := f.fakeIn(quick(nil), "--slow-initialize=1s", "--record="+record)
	start := time.Now()
	require.NoError(t, f.m.Add("x", spec))

	type result struct {
		text string
		err  error
		at   time.Duration
	}
	run := func(msg string, timeout time.Duration) <-chan result {
		ch := make(chan result, 1)
		go func() {
			got, err := f.call("x.echo", map[string]any{"text": msg}, timeout)
			ch <- result{got, err, time.Since(start)}
		}()
		return ch
	}
	a, b := run("a", 100*ms), run("b", patience)

	// A returns at its own deadline, while the attempt is still
	// connecting (the error says so), before B is served by that attempt.
	ra := <-a
	requireFault(t, ra.err, manager.ErrConnectionTimeout, "x", `tools/call "echo"`, manager.ErrTimeout)
	require.EqualError(t, ra.err, `server "x": tools/call "echo": still connecting: timeout after 100ms`)
	require.GreaterOrEqual(t, ra.at, 100*ms)

	rb := <-b
	require.NoError(t, rb.err)
	require.Equal(t, "b", rb.text)
	require.GreaterOrEqual(t, rb.at, time.Second, "B is served by the one attempt")
	require.Less(t, ra.at, rb.at, "A returned before the attempt completed")

	require.Len(t, f.pids(spec), 1, "exactly one spawn")
	awaitRecord(t, record, toolCallLine, 1)
	b2, err := os.ReadFile(record)
	require.NoError(t, err)
	require.Len(t, regexp.MustCompile(`(?m)^initialize id=`).FindAll(b2, -1), 1, "exactly one initialize:\n%s", b2)
	evs := lifecycle(f.until("x", events.KindConnected, patience))
	require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindConnected}, kinds(evs))
}

// One server's events arrive in order, even with a caller waiting for a
// connect: the call served by the new session is reported (tool_call) after
// the connected event of that session, never before. The race is narrow, so
// the scenario runs 20 times; it failed about one run in ten.
func TestCallEventsFollowConnected(t *testing.T) {
	f := faultManager(t, manager.Options{})
	for i := range 20 {
		name := "x" + strconv.Itoa(i)
		require.NoError(t, f.m.Add(name, f.fakeIn(quick(nil), "--slow-initialize=100ms")))
		_, err := f.call(name+".echo", map[string]any{"text": "b"}, patience)
		require.NoError(t, err)
		evs := f.until(name, events.KindConnected, patience)
		require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindConnected}, kinds(evs),
			"round %d: the call's tool_call came before connected", i)
		remove(t, f.m, name)
		f.until(name, events.KindRemoved, patience)
	}
}
