//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// SelfCPU is the CPU time (user + system) this process has used.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcessExists reports whether a process with that pid exists (a zombie
// not yet reaped counts).
func ProcessExists(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }

// PeakRSS is the most memory this process has held resident, in bytes.
func PeakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) * maxrssUnit
}
