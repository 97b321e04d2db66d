package manager

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one stdio server: a child in its own process group whose
// stdin, stdout and stderr are pipes we own (not exec's), so that reading
// stdout to EOF never races with Wait, and a grandchild holding a pipe can
// never wedge us.
//
// Its close sequence (SPEC §13) is: close stdin, wait up to grace; SIGTERM to
// the group, wait up to grace; SIGKILL to the group; reap. A final SIGKILL to
// the group always follows, so grandchildren die too.
type process struct {
	server string
	cmd    *exec.Cmd
	stdin  *os.File // write end
	stdout *os.File // read end
	stderr *os.File // read end
	tail   *tailBuffer
	grace  time.Duration

	exited  chan struct{} // closed once the child is reaped
	waitErr error         // valid after exited is closed

	drained   chan struct{} // closed when the stderr drain ends
	closeOnce sync.Once
	forced    bool // valid after Close: SIGTERM or SIGKILL was needed
}

// startProcess spawns spec.Command. It returns once the child runs; it
// never waits for the server to speak.
func startProcess(server string, spec Spec, grace time.Duration, logger *slog.Logger) (*process, error) {
	cmd := exec.Command(spec.Command[0], spec.Command[1:]...)
	cmd.Dir = spec.Cwd
	cmd.Env = os.Environ()
	for k, v := range spec.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

	var files []*os.File // every end, closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (*process, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	// The child has its copies; ours of the child's ends must go so that EOF
	// on stdout means every writer is gone.
	inR.Close()
	outW.Close()
	errW.Close()

	p := &process{
		server:  server,
		cmd:     cmd,
		stdin:   inW,
		stdout:  outR,
		stderr:  errR,
		tail:    newTailBuffer(64 << 10),
		grace:   grace,
		exited:  make(chan struct{}),
		drained: make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go p.drainStderr(logger)
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// drainStderr reads stderr until EOF or until Close closes it, keeping the
// last lines and logging each at debug. A chatty server never blocks.
func (p *process) drainStderr(logger *slog.Logger) {
	defer close(p.drained)
	buf := make([]byte, 32<<10)
	var partial []byte
	for {
		n, err := p.stderr.Read(buf)
		if n > 0 {
			p.tail.Write(buf[:n])
			partial = append(partial, buf[:n]...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				logStderr(logger, p.server, partial[:i])
				partial = partial[i+1:]
			}
			if len(partial) > 4<<10 { // a very long line: log what we have
				logStderr(logger, p.server, partial)
				partial = partial[:0]
			}
			partial = append([]byte(nil), partial...)
		}
		if err != nil {
			if len(partial) > 0 {
				logStderr(logger, p.server, partial)
			}
			return
		}
	}
}

func logStderr(logger *slog.Logger, server string, line []byte) {
	const maxLine = 512
	s := strings.TrimRight(string(line), "\r")
	if len(s) > maxLine {
		s = s[:maxLine] + "…"
	}
	logger.Debug("server stderr", "server", server, "line", s)
}

// exitError describes how the child ended, with its last stderr lines:
// "exited with exit status 1: <stderr>". It returns nil while it runs.
func (p *process) exitError() error {
	select {
	case <-p.exited:
	default:
		return nil
	}
	// The child is reaped, but the drain may not have read the last of its
	// stderr yet, and those lines are the point of this message (R-REQ-5).
	// A grandchild that keeps stderr open bounds the wait.
	t := time.NewTimer(250 * time.Millisecond)
	select {
	case <-p.drained:
	case <-t.C:
	}
	t.Stop()
	status := "exit status 0"
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		status = ee.ProcessState.String()
	} else if p.waitErr != nil {
		status = p.waitErr.Error()
	}
	if tail := p.tail.LastLines(5, 400); tail != "" {
		return fmt.Errorf("process exited (%s): %s", status, tail)
	}
	return fmt.Errorf("process exited (%s)", status)
}

// Close stops the process group and reaps the child. It is idempotent and
// safe to call from any goroutine; it returns when the child is reaped and
// stderr drained.
func (p *process) Close() error {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		if !p.waitExit(p.grace) {
			p.forced = true
			p.signalGroup(syscall.SIGTERM)
			if !p.waitExit(p.grace) {
				p.signalGroup(syscall.SIGKILL)
				<-p.exited
			}
		}
		p.signalGroup(syscall.SIGKILL) // grandchildren left in the group
		p.stdout.Close()
		// Let the drain read stderr to EOF, so the last lines it printed
		// before dying are kept (R-REQ-5); closing our end first would
		// discard what is still in the pipe. A writer outside the group
		// bounds the wait.
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-p.drained:
		case <-t.C:
		}
		t.Stop()
		p.stderr.Close()
		<-p.drained
	})
	return nil
}

func (p *process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

func (p *process) signalGroup(sig syscall.Signal) {
	// The group id is the child's pid (Setpgid). ESRCH means it is gone.
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// stdoutReader is the SDK's view of stdout. Its Close is a no-op: the
// process closes stdout itself, in order, in Close.
type stdoutReader struct{ p *process }

func (r stdoutReader) Read(b []byte) (int, error) { return r.p.stdout.Read(b) }
func (r stdoutReader) Close() error               { return nil }

// stdinWriter is the SDK's view of stdin; closing it runs the process's
// close sequence.
type stdinWriter struct{ p *process }

func (w stdinWriter) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }
func (w stdinWriter) Close() error                { return w.p.Close() }

var _ io.ReadCloser = stdoutReader{}
