//go:build unix

package interop

import (
	"os/exec"
	"syscall"
	"time"
)

// newGroup starts cmd in a process group of its own, so stop reaches
// everything node starts.
func newGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// stop terminates the process group (SIGTERM, then SIGKILL after termGrace)
// and waits until the process has been reaped.
func (s *server) stop() {
	pgid := s.cmd.Process.Pid // Setpgid: the group id is the leader's pid
	select {
	case <-s.done:
	default:
		// The leader is alive or a zombie not yet reaped by our Wait, so its
		// pid (the group id) has not been reused.
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(termGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-s.done
		}
	}
	// Catch any straggler left in the group by a leader that died on its own.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
