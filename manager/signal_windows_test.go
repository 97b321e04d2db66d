//go:build windows

package manager_test

import (
	"os"
	"syscall"
)

// signal is the Windows stand-in for kill(2), so the package's tests
// compile there: signal 0 asks whether pid exists (syscall.ESRCH once it
// is gone) and any other signal ends the process. Windows has no process
// groups, so a negative pid is refused with syscall.EWINDOWS rather than
// answered: a test that checks a group fails there instead of passing
// without having looked.
func signal(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return syscall.EWINDOWS
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return syscall.ESRCH
	}
	defer p.Release()
	if sig == 0 {
		return nil
	}
	return p.Kill()
}
