//go:build !linux && !windows

package proc

import (
	"os/exec"
	"syscall"
)

// RunShimIfAsked does nothing here: the shim needs Linux (the parent-death
// signal and child subreapers), so servers are started directly.
func RunShimIfAsked() {}

// launch is the server itself: there is no shim.
type launch struct{ cmd *exec.Cmd }

func newLaunch(server *exec.Cmd) (*launch, error) {
	server.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return &launch{cmd: server}, nil
}

func (l *launch) closeReport() {}

func (l *launch) serverPid() (int, error) { return l.cmd.Process.Pid, nil }

// spawn starts the launch's command and reaps it on a goroutine of its own.
func (l *launch) spawn(reaped func(error)) error {
	cmd := l.cmd
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { reaped(cmd.Wait()) }()
	return nil
}
