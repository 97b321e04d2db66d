//go:build linux

package main

// End-to-end tests of the mcpvisor binary. TestMain builds the binary once
// (with -race when the tests run with -race, so the host's own races show
// up as failures here too); each test runs it with os/exec and checks exit
// code, stdout, stderr and what is left of its processes afterwards.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// mcpvisorBin is the absolute path of the binary under test.
var mcpvisorBin string

// runTimeout bounds any single run of the binary; every run here takes
// milliseconds to a few seconds, so hitting it means a hang.
const runTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpvisor-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(2)
	}
	mcpvisorBin = filepath.Join(dir, "mcpvisor")
	args := []string{"build", "-o", mcpvisorBin}
	if testutil.RaceEnabled() {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go %s: %v\n", strings.Join(args, " "), err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	// Become a child subreaper (PR_SET_CHILD_SUBREAPER): a process that
	// outlives the mcpvisor that started it is reparented to this test
	// process instead of PID 1, so noLeftovers can see it, and reap it.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "e2e: prctl(PR_SET_CHILD_SUBREAPER):", errno)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	if code == 0 {
		// readline's Close leaves its key loop blocked for good, sending
		// a last end of file nobody reads; only the in-process REPL test
		// closes a readline before the process exits.
		if err := goleak.Find(goleak.IgnoreTopFunction("github.com/chzyer/readline.(*Operation).ioloop")); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: leaked goroutines:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// invocation is one run of the binary.
type invocation struct {
	args []string
	// argv, if set, is run instead of the binary with args (e.g. to run
	// it under script(1)).
	argv []string
	// dir is the working directory; "" means a fresh empty directory, so
	// that there is no ./startup.lua and the built-in default applies.
	dir   string
	stdin string
	env   []string // added to the test's environment
}

// outcome is what a finished run produced.
type outcome struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// command builds the exec.Cmd of inv with the common environment: the REPL
// history goes to a temporary XDG_STATE_HOME, never to the user's home.
func command(ctx context.Context, t *testing.T, inv invocation) *exec.Cmd {
	t.Helper()
	argv := append([]string{mcpvisorBin}, inv.args...)
	if inv.argv != nil {
		argv = inv.argv
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = inv.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	cmd.Env = append(binaryEnv(), "XDG_STATE_HOME="+t.TempDir())
	cmd.Env = append(cmd.Env, inv.env...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// binaryEnv is the environment to run the binary with. A -race binary
// sleeps 1s at exit by default (so late reports can still be printed); the
// demo server is the same binary, so every run would take 2s longer.
func binaryEnv() []string {
	env := os.Environ()
	if _, set := os.LookupEnv("GORACE"); !set {
		env = append(env, "GORACE=atexit_sleep_ms=20")
	}
	return env
}

// runBinary runs the binary to completion (at most runTimeout) and checks the
// invariants every run must keep: no data race report, no unreaped child.
func runBinary(t *testing.T, inv invocation) outcome {
	t.Helper()
	noLeftovers(t)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := command(ctx, t, inv)
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(inv.stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Start()
	if err == nil {
		ownPIDs.Store(cmd.Process.Pid, struct{}{})
		err = cmd.Wait()
	}
	o := outcome{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(began)}
	t.Logf("mcpvisor %s (in %v): exit %d\nstdout:\n%s\nstderr:\n%s",
		quoteArgs(inv.args), o.took.Round(time.Millisecond), cmd.ProcessState.ExitCode(), o.stdout, o.stderr)
	if ctx.Err() != nil {
		t.Fatalf("mcpvisor %s did not finish within %v", quoteArgs(inv.args), runTimeout)
	}
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		t.Fatalf("running mcpvisor: %v", err)
	}
	o.code = cmd.ProcessState.ExitCode()
	checkNoRace(t, o.stderr)
	return o
}

func checkNoRace(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "WARNING: DATA RACE") {
		t.Errorf("the binary reported a data race (see stderr above)")
	}
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

// process is a binary started in the background, whose stdin stays open
// until the test closes it.
type process struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, line by line; closed at EOF
	stdout syncBuffer  // everything read from stdout
	stderr syncBuffer
	exited chan struct{} // closed once Wait returned
	err    error         // Wait's result, valid after exited
}

// start starts the binary with a pipe as stdin. The process is killed and
// reaped when the test ends, if it is still running.
func start(t *testing.T, inv invocation) *process {
	t.Helper()
	noLeftovers(t)
	p := &process{t: t, cmd: command(context.Background(), t, inv), lines: make(chan string, 1000), exited: make(chan struct{})}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = stdin
	// Our own pipe (an *os.File) so exec starts no copier that Wait would
	// wait for; the reader below owns the read end.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = outW
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		t.Fatalf("start mcpvisor: %v", err)
	}
	outW.Close()
	ownPIDs.Store(p.cmd.Process.Pid, struct{}{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		defer close(p.lines)
		defer outR.Close()
		// Raw reads go to p.stdout as they come (a prompt has no newline);
		// complete lines also go to p.lines.
		buf := make([]byte, 32<<10)
		var partial []byte
		for {
			n, err := outR.Read(buf)
			p.stdout.Write(buf[:n])
			partial = append(partial, buf[:n]...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				select {
				case p.lines <- string(partial[:i]):
				default: // nobody reads lines (a test that watches p.stdout)
				}
				partial = partial[i+1:]
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		<-read
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		t.Logf("mcpvisor %s: exit %d\nstdout:\n%s\nstderr:\n%s", quoteArgs(inv.args),
			p.cmd.ProcessState.ExitCode(), p.stdout.String(), p.stderr.String())
		checkNoRace(t, p.stderr.String())
	})
	return p
}

// line returns the next stdout line, failing the test after timeout.
func (p *process) line(timeout time.Duration) string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("stdout ended early; stderr:\n%s", p.stderr.String())
		}
		return l
	case <-time.After(timeout):
		p.t.Fatalf("no stdout line within %v; stderr:\n%s", timeout, p.stderr.String())
	}
	return ""
}

// wait waits up to timeout for the process to exit and reports whether it
// did.
func (p *process) wait(timeout time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers,
// which can wait for the next write.
type syncBuffer struct {
	mu sync.Mutex
	// mu guards buf and changed.
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced by every Write
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	s, _ := b.watch()
	return s
}

// watch returns the content and a channel closed at the next Write.
func (b *syncBuffer) watch() (string, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.buf.String(), b.changed
}

// waitFor waits until ok accepts the buffer's content, failing t after
// timeout.
func (b *syncBuffer) waitFor(t *testing.T, what string, timeout time.Duration, ok func(string) bool) string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s, changed := b.watch()
		if ok(s) {
			return s
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%s: not seen within %v; got:\n%s", what, timeout, s)
		}
	}
}

// ---- /proc checks ----

// procState returns the state letter of pid from /proc/PID/stat and its
// command line, or ok false if there is no such process.
func procState(pid int) (state byte, cmdline string, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, "", false
	}
	cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return s[i+2], strings.ReplaceAll(string(cl), "\x00", " "), true
}

// childrenOf lists the processes whose parent is ppid, with their state
// letters.
func childrenOf(ppid int) map[int]byte {
	out := make(map[int]byte)
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 {
			continue
		}
		if parent, _ := strconv.Atoi(f[1]); parent == ppid {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			out[pid] = f[0][0]
		}
	}
	return out
}

// noLeftovers checks, once the test and its cleanups are done, what is
// left of the processes it started. Children of the test process are the
// binaries it ran (each reaped by exec's Wait) and, as the test process is a
// subreaper, any process that outlived the mcpvisor that started it:
//   - a zombie that is one of ours was never reaped: an error;
//   - a zombie orphan is a server's child that was killed with its process
//     group but whose parent had already gone: reaped here;
//   - a running orphan is a server process mcpvisor left behind: an error
//     (it gets 2s to die first, as a group SIGKILL is asynchronous), and
//     it is killed and reaped.
func noLeftovers(t *testing.T) {
	t.Cleanup(func() {
		// Nothing to wait on for an orphan: look until none runs, reaping
		// the ones that died.
		assert.Eventually(t, func() bool {
			running := 0
			for pid, state := range childrenOf(os.Getpid()) {
				switch {
				case state == 'Z' && !ours(pid):
					var ws syscall.WaitStatus
					_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
				case state != 'Z' && !ours(pid):
					running++
				}
			}
			return running == 0
		}, 2*time.Second, 10*time.Millisecond, "processes outlived the mcpvisor that started them")
		for pid, state := range childrenOf(os.Getpid()) {
			if state == 'Z' && ours(pid) {
				t.Errorf("child %d of the test process is a zombie (never reaped)", pid)
			}
			if state != 'Z' && !ours(pid) {
				_, cmdline, _ := procState(pid)
				t.Errorf("process %d (%q) outlived the mcpvisor that started it", pid, cmdline)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, 0, nil)
			}
		}
	})
}

// ownPIDs are the processes the tests started themselves.
var ownPIDs sync.Map // int → struct{}

func ours(pid int) bool {
	_, ok := ownPIDs.Load(pid)
	return ok
}

// requireGone fails the test if pid still exists. It is called after the
// mcpvisor that owned pid has exited: mcpvisor reaps its servers before it
// exits, so the process must be gone entirely, not even a zombie.
func requireGone(t *testing.T, pid int, what string) {
	t.Helper()
	if state, cmdline, ok := procState(pid); ok {
		// Kill it so that one failure does not leave a process behind.
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("%s (pid %d, %q) is still there in state %c after mcpvisor exited", what, pid, cmdline, state)
	}
}
