//go:build unix

package manager_test

import "syscall"

// signal sends sig to pid as kill(2) does: a negative pid names a process
// group, and signal 0 only asks whether the process (or group) exists,
// answering syscall.ESRCH once it is gone.
func signal(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
