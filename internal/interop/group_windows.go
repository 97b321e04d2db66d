package interop

import "os/exec"

// newGroup does nothing on Windows: node is stopped by itself.
func newGroup(*exec.Cmd) {}

// stop kills the server and waits until it has been reaped.
func (s *server) stop() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}
