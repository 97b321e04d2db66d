package proc

import (
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows has no process groups that a signal reaches, nor a parent-death
// signal. A server is instead put in a Job Object that kills every process
// in it when it is terminated or its last handle is closed: the host's
// handle is the last, so the server's processes end with the host however
// it ends. Processes the server starts join its job by themselves.

// RunShimIfAsked does nothing on Windows: the Job Object does the shim's
// work.
func RunShimIfAsked() {}

// launch is the server and the job it runs in.
type launch struct {
	cmd *exec.Cmd
	job windows.Handle
}

func newLaunch(server *exec.Cmd) (*launch, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, fmt.Errorf("set up the job object: %w", err)
	}
	// Its own console process group: the host's Ctrl-C is the host's.
	server.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
	return &launch{cmd: server, job: job}, nil
}

func (l *launch) closeReport() {}

func (l *launch) serverPid() (int, error) { return l.cmd.Process.Pid, nil }

func (l *launch) group(int) processGroup {
	return processGroup{job: &jobHandle{h: l.job}}
}

// spawn starts the server, puts it in its job, and reaps it on a
// goroutine of its own. A process the server starts before it is in the
// job (the moment between the two) is not in it.
func (l *launch) spawn(reaped func(error)) error {
	cmd := l.cmd
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := l.assign(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	go func() { reaped(cmd.Wait()) }()
	return nil
}

func (l *launch) assign() error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(l.cmd.Process.Pid))
	if err != nil {
		return fmt.Errorf("open the server's process: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(l.job, h); err != nil {
		return fmt.Errorf("put the server in its job object: %w", err)
	}
	return nil
}

// jobHandle is a job's handle, closed once.
type jobHandle struct {
	once sync.Once
	h    windows.Handle
}

// processGroup is the server's job: every process in it.
type processGroup struct{ job *jobHandle }

// signal ends every process of the job for SIGKILL, the last step of a
// stop, and closes the job. Windows has no polite signal to send a console
// process that is not attached to ours, so SIGTERM does nothing: the stop
// sequence has already closed the server's stdin, which is how a stdio
// server is asked to leave.
func (g processGroup) signal(sig syscall.Signal) {
	if g.job == nil || sig != syscall.SIGKILL {
		return
	}
	g.job.once.Do(func() {
		_ = windows.TerminateJobObject(g.job.h, 1)
		_ = windows.CloseHandle(g.job.h)
	})
}
