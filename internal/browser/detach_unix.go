//go:build unix

package browser

import (
	"os/exec"
	"syscall"
)

// detach starts the browser in a process group of its own, so the
// terminal's Ctrl-C (sent to the host's group) does not reach it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
