package browser

import (
	"os/exec"
)

// Process is a started browser command.
type Process struct {
	Argv []string
	pid  int
	done chan struct{} // closed once the command has exited and been reaped
	err  error         // how it exited; set before done is closed
}

// Start starts argv (one of [Commands]) in a process group of its own,
// without our stdin, stdout or stderr, and reaps it when it exits (see
// the package doc). It does not check the URL: see [CheckURL].
func Start(argv []string) (*Process, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	detach(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Argv: argv, pid: cmd.Process.Pid, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.err = cmd.Wait()
	}()
	return p, nil
}

// Done is closed once the command has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is how the command exited (nil for status 0); valid once Done is
// closed.
func (p *Process) Err() error {
	<-p.done
	return p.err
}
