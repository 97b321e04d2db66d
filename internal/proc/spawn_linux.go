package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// shimEnv, set to "off" in the host's environment, makes the host start
// servers directly, without the shim: the direct child then still dies
// with the host (its parent-death signal), but its grandchildren may not.
const shimEnv = "MCPVISOR_SHIM"

// shimCapable is set once RunShimIfAsked has run in this binary: only then
// can the binary be re-executed as a shim.
var shimCapable atomic.Bool

// RunShimIfAsked turns this process into a server's shim when it was
// started as one, and never returns then; otherwise it notes that the
// binary can serve as a shim and returns at once. A program that starts
// stdio servers calls it first thing in main (tests, in TestMain): without
// it, servers are started directly and a grandchild may outlive a host
// that is killed.
func RunShimIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == shimArg {
		// Straight to exit_group: nothing of the program's is to run, and
		// the race detector's exit hook would hold the exit back a second.
		unix.Exit(runShim(os.Args[2:]))
	}
	shimCapable.Store(true)
}

// launch is what the host starts for a server: the shim with the server's
// command, or the server itself when there is no shim.
type launch struct {
	cmd *exec.Cmd
	// report is the read end of the shim's pid report (nil without a
	// shim); reportW the write end, which the host closes once started.
	report, reportW *os.File
}

// newLaunch wraps server (resolved, with its pipes, directory and
// environment) in the shim when the binary can be one. The child gets its
// own process group and dies with the host's spawning thread (see spawn).
func newLaunch(server *exec.Cmd) (*launch, error) {
	if !shimCapable.Load() || os.Getenv(shimEnv) == "off" {
		server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		return &launch{cmd: server}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// /proc/self/exe is this binary even if its file was replaced or
	// removed since it started.
	self := "/proc/self/exe"
	argv0, err := os.Executable()
	if err != nil {
		argv0 = self
	}
	args := append([]string{argv0, shimArg, strconv.Itoa(os.Getpid()), server.Path, "--"}, server.Args...)
	shim := &exec.Cmd{
		Path:       self,
		Args:       args,
		Env:        server.Env,
		Dir:        server.Dir,
		Stdin:      server.Stdin,
		Stdout:     server.Stdout,
		Stderr:     server.Stderr,
		ExtraFiles: []*os.File{w}, // shimReportFd
		// SIGTERM, not SIGKILL: the shim must live to kill the server's
		// group when the host is gone.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
	}
	return &launch{cmd: shim, report: r, reportW: w}, nil
}

// shimReportWait bounds the wait for the shim to report the server's pid.
const shimReportWait = 10 * time.Second

// closeReport closes what is left of the report pipe.
func (l *launch) closeReport() {
	if l.report != nil {
		l.report.Close()
		l.reportW.Close()
	}
}

// serverPid returns the server's pid once l.cmd runs: the shim's report,
// or the child itself without a shim.
func (l *launch) serverPid() (int, error) {
	if l.report == nil {
		return l.cmd.Process.Pid, nil
	}
	l.reportW.Close() // the shim has its copy: EOF if it dies before reporting
	_ = l.report.SetReadDeadline(time.Now().Add(shimReportWait))
	b, err := io.ReadAll(io.LimitReader(l.report, 4<<10))
	l.report.Close()
	if err != nil {
		// A shim that does not report is not one (the binary did something
		// else before it called RunShimIfAsked): stop it.
		_ = l.cmd.Process.Kill()
		return 0, fmt.Errorf("the process shim did not report the server's pid: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if msg, ok := strings.CutPrefix(s, "error "); ok {
		return 0, errors.New(msg)
	}
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("the process shim did not start the server (it reported %q)", s)
	}
	return pid, nil
}

// spawn starts the launch's command from a goroutine locked to its OS thread, and reaps it
// there (then calls reaped with what Wait returned). The kernel sends a
// child its parent-death signal when the thread that forked it ends, not
// the process, and the Go runtime ends the thread of a goroutine that
// exits locked: keeping the thread for the child's life means the signal
// comes only when the host dies.
func (l *launch) spawn(reaped func(error)) error {
	cmd := l.cmd
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			runtime.UnlockOSThread()
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		runtime.UnlockOSThread()
		reaped(err)
	}()
	return <-started
}
