package browser

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// detach starts the browser in a console process group of its own, so the
// console's Ctrl-C does not reach it.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}
