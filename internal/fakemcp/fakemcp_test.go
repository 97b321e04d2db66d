//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fakemcptest.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// proc is a running fakemcp in its own process group, with our ends of its
// stdin/stdout pipes and a drained stderr.
type proc struct {
	cmd     *exec.Cmd
	stdin   *os.File // write end
	stdout  *os.File // read end
	stderr  *tailBuffer
	done    chan struct{}
	waitErr error // valid after done
}

// start runs fakemcp with args. t.Cleanup kills the whole process group,
// reaps the child and checks that no member of the group is left running.
func start(t *testing.T, args ...string) *proc {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{stdin: inW, stdout: outR, stderr: &tailBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(fakemcptest.Build(t), args...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.WaitDelay = 2 * time.Second
	err = p.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		t.Fatal(err)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.killGroup(t)
		p.stdin.Close()
		p.stdout.Close()
		if t.Failed() {
			t.Logf("fakemcp %q stderr (%d bytes, start):\n%.4096s", args, p.stderr.Len(), p.stderr.String())
		}
	})
	return p
}

// killGroup SIGKILLs the process group, reaps the child and waits until no
// member of the group is running (orphaned grandchildren may linger as
// zombies if PID 1 does not reap them).
func (p *proc) killGroup(t *testing.T) {
	t.Helper()
	pgid := p.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, groupMembers(pgid), "process group %d still running", pgid)
	}, 5*time.Second, 10*time.Millisecond)
}

// exitCode waits up to timeout for the child to exit and returns its code.
func (p *proc) exitCode(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("fakemcp still running after %v", timeout)
	}
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		return ee.ExitCode()
	}
	if p.waitErr != nil {
		t.Fatalf("wait: %v", p.waitErr)
	}
	return 0
}

// running reports whether the child is still running after d.
func (p *proc) running(d time.Duration) bool {
	select {
	case <-p.done:
		return false
	case <-time.After(d):
		return true
	}
}

// connect attaches a go-sdk client to p.
func (p *proc) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "fakemcp-test", Version: "v0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: p.stdout, Writer: p.stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// groupMembers lists "pid:state" of processes in group pgid that are not zombies.
func groupMembers(pgid int) []string {
	var live []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		live = append(live, filepath.Base(filepath.Dir(f))+":"+fields[0])
	}
	return live
}

// tailBuffer counts everything written and keeps the first 64 KiB.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(len(p))
	if room := 64<<10 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *tailBuffer) Len() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

// waitFor polls until cond holds or fails t after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, timeout, 5*time.Millisecond, "timed out after %v waiting for %s", timeout, what)
}

func readLines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func echo(t *testing.T, cs *mcp.ClientSession, tool, text string) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("call %s: %+v", tool, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestGoSDKClient checks that the go-sdk client (which probes server/discover
// first) falls back to initialize and works over a plain CommandTransport.
func TestGoSDKClient(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	client := mcp.NewClient(&mcp.Implementation{Name: "fakemcp-test", Version: "v0"}, nil)
	cmd := exec.Command(fakemcptest.Build(t), "--name=fake1", "--tools=2", "--record="+record)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()

	init := cs.InitializeResult()
	if init.ServerInfo.Name != "fake1" || init.ProtocolVersion != "2025-11-25" {
		t.Errorf("initialize result: server %+v, protocol %s", init.ServerInfo, init.ProtocolVersion)
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"echo", "slow", "t0", "t1"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	if got := echo(t, cs, "echo", "hello"); got != "hello" {
		t.Errorf("echo = %q", got)
	}
	if got := echo(t, cs, "t1", "x y"); got != "x y" {
		t.Errorf("t1 = %q", got)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "t2"}); err == nil {
		t.Error("calling unknown tool t2 succeeded")
	}
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Errorf("ping: %v", err)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}

	var methods []string
	for _, l := range readLines(t, record) {
		methods = append(methods, strings.Fields(l)[0])
	}
	want := []string{"server/discover", "initialize", "notifications/initialized", "tools/list", "tools/call", "tools/call", "tools/call", "ping"}
	if !slices.Equal(methods, want) {
		t.Errorf("recorded %v, want %v", methods, want)
	}
}

func TestCrashAfterCalls(t *testing.T) {
	t.Parallel()
	p := start(t, "--crash-after=2", "--exit-code=3")
	cs := p.connect(t)
	echo(t, cs, "echo", "1")
	echo(t, cs, "echo", "2")
	if code := p.exitCode(t, 5*time.Second); code != 3 {
		t.Errorf("exit code %d, want 3", code)
	}
	if !strings.Contains(p.stderr.String(), "fakemcp: crashing\n") {
		t.Errorf("stderr = %q", p.stderr.String())
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo"}); err == nil {
		t.Error("call after crash succeeded")
	}
}

// --reply makes every echoing tool answer the given text, its Go escapes
// decoded: a server that sends terminal escape sequences.
func TestReply(t *testing.T) {
	t.Parallel()
	p := start(t, "--tools=1", `--reply=A\x1b]0;PWNED\x07\x1b[2JB \u202e`)
	cs := p.connect(t)
	for _, tool := range []string{"echo", "t0"} {
		if got := echo(t, cs, tool, "ignored"); got != "A\x1b]0;PWNED\a\x1b[2JB \u202e" {
			t.Errorf("%s = %q", tool, got)
		}
	}
}

func TestCrashAfterInitialize(t *testing.T) {
	t.Parallel()
	p := start(t, "--crash-after=0")
	p.connect(t) // succeeds: the crash follows notifications/initialized
	if code := p.exitCode(t, 5*time.Second); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
}

func TestCrashAfterDuration(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	p := start(t, "--crash-after=300ms", "--exit-code=7")
	if code := p.exitCode(t, 5*time.Second); code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
	if d := time.Since(begin); d < 300*time.Millisecond {
		t.Errorf("crashed after %v, want >= 300ms", d)
	}
}

// TestHangToolCancelled: a caller timeout makes the go-sdk client send
// notifications/cancelled for the hung call, and the session stays usable.
func TestHangToolCancelled(t *testing.T) {
	t.Parallel()
	record := filepath.Join(t.TempDir(), "record")
	p := start(t, "--hang-tool=slow", "--record="+record)
	cs := p.connect(t)

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 1}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call returned %v, want DeadlineExceeded", err)
	}
	var id string
	waitFor(t, 5*time.Second, "notifications/cancelled in the record", func() bool {
		for _, l := range readLines(t, record) {
			if s, ok := strings.CutPrefix(l, "tools/call id="); ok {
				id = s
			}
			if id != "" && l == "notifications/cancelled requestId="+id {
				return true
			}
		}
		return false
	})
	if got := echo(t, cs, "echo", "still alive"); got != "still alive" {
		t.Errorf("echo after cancel = %q", got)
	}
}

func TestStderrFloodPerCall(t *testing.T) {
	t.Parallel()
	p := start(t, "--stderr-flood=256KiB")
	cs := p.connect(t)
	for i := range 4 {
		echo(t, cs, "echo", strconv.Itoa(i))
	}
	// Our stderr copier may lag behind the server's writes.
	waitFor(t, 5*time.Second, "1 MiB of stderr", func() bool { return p.stderr.Len() >= 4*256<<10 })
	time.Sleep(50 * time.Millisecond)
	if n := p.stderr.Len(); n != 4*256<<10 {
		t.Errorf("stderr got %d bytes, want %d", n, 4*256<<10)
	}
}

func TestStderrFloodContinuous(t *testing.T) {
	t.Parallel()
	p := start(t, "--stderr-flood=continuous")
	cs := p.connect(t)
	waitFor(t, 10*time.Second, "1 MiB of stderr", func() bool { return p.stderr.Len() > 1<<20 })
	echo(t, cs, "echo", "through the flood")
}

var grandchildRE = regexp.MustCompile(`fakemcp: grandchild pid=(\d+)\n`)

func grandchildPID(t *testing.T, p *proc) int {
	t.Helper()
	var pid int
	waitFor(t, 5*time.Second, "the grandchild pid on stderr", func() bool {
		m := grandchildRE.FindStringSubmatch(p.stderr.String())
		if m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
		return m != nil
	})
	return pid
}

func TestSpawnGrandchild(t *testing.T) {
	t.Parallel()
	p := start(t, "--spawn-grandchild")
	pid := grandchildPID(t, p)
	pgid, err := syscall.Getpgid(pid)
	if err != nil || pgid != p.cmd.Process.Pid {
		t.Fatalf("grandchild %d: pgid %d (%v), want %d", pid, pgid, err, p.cmd.Process.Pid)
	}
	p.connect(t)
	p.killGroup(t) // fails the test if the grandchild survives
}

// TestGrandchildHoldsStdout: after the child dies, stdout stays open until
// the grandchild dies too.
func TestGrandchildHoldsStdout(t *testing.T) {
	t.Parallel()
	p := start(t, "--grandchild-holds-stdout")
	grandchildPID(t, p)
	syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	p.exitCode(t, 5*time.Second)

	p.stdout.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := p.stdout.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with the grandchild alive: %v, want a timeout", err)
	}
	p.killGroup(t)
	p.stdout.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := p.stdout.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read after the group died: %v, want EOF", err)
	}
}
