//go:build unix

package proc

import "syscall"

// processGroup is a server's process group: the server was started with
// Setpgid, so the group id is its pid.
type processGroup struct{ pgid int }

func (l *launch) group(pid int) processGroup { return processGroup{pgid: pid} }

// signal sends sig to the group; ESRCH means it is gone. Without a shim
// the server is the child; with one, the shim is not in the group, and
// follows the server out.
func (g processGroup) signal(sig syscall.Signal) {
	if g.pgid > 0 {
		_ = syscall.Kill(-g.pgid, sig)
	}
}
