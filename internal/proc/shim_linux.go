package proc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The shim is this same binary, re-executed between the host and a stdio
// server so that the server's processes cannot outlive the host, however
// the host dies. It is the server's parent and a child subreaper: every
// descendant the server orphans is re-parented to it, not to init. It
// starts the server in a process group of its own, with the host's pipes
// as its standard streams (nothing is copied), tells the host the server's
// pid, and then only waits:
//
//   - when the server exits, the shim kills what is left of its group and
//     every other descendant, reaps them all, and exits the way the server
//     did (the same exit code, or the same signal);
//   - when the host goes away (its parent-death signal, checked against
//     its parent pid), it does the same at once and exits.
//
// The host still stops the server itself: it closes the server's stdin and
// signals the server's group, which the shim is not in.

// shimArg is the hidden subcommand that makes the binary a shim:
// `BINARY __shim HOSTPID PATH -- ARGV...`.
const shimArg = "__shim"

// runShim is the shim's main; args follow shimArg. It returns the exit
// code, unless the server died of a signal, which it re-raises.
func runShim(args []string) int {
	// The server's parent-death signal belongs to the thread that forks
	// it: this one, for the life of the shim.
	runtime.LockOSThread()
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "mcpvisor: __shim is internal: it runs a server for the host")
		return 2
	}
	host, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpvisor: __shim: bad host pid", args[0])
		return 2
	}
	report := os.NewFile(shimReportFd, "report")
	syscall.CloseOnExec(shimReportFd) // the server must not hold it
	fail := func(err error) int {
		fmt.Fprintf(report, "error %v\n", err)
		return 127
	}

	sigs := make(chan os.Signal, 8)
	// The host's death arrives as SIGTERM (its parent-death signal); the
	// rest are caught so that no stray signal ends the shim before its
	// server.
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT)
	if os.Getppid() != host {
		return fail(fmt.Errorf("the host (pid %d) went away before the server started", host))
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", err))
	}
	cmd := &exec.Cmd{
		Path:        args[1],
		Args:        args[3:],
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	server := cmd.Process.Pid
	fmt.Fprintf(report, "%d\n", server)
	report.Close()
	releaseStdio()

	status, orphaned := awaitServer(server, host, sigs)
	killDescendants(server)
	if orphaned {
		return 1
	}
	if status.Signaled() {
		raise(status.Signal())
	}
	return status.ExitStatus()
}

// shimReportFd is the shim's end of the pipe on which it reports the
// server's pid, or why it could not start it ("error ...").
const shimReportFd = 3

// releaseStdio points the shim's stdin and stdout at /dev/null: the server
// has them, and a copy held here would keep the host's writes from failing
// and its reads from ending once the server is gone. Stderr stays, for the
// shim's own last words.
func releaseStdio() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return
	}
	defer null.Close()
	_ = unix.Dup3(int(null.Fd()), 0, 0)
	_ = unix.Dup3(int(null.Fd()), 1, 0)
}

// awaitServer reaps children until the server is among them, and returns
// its status; it returns orphaned when the host is gone first. Orphans the
// shim adopted meanwhile are reaped as they exit.
func awaitServer(server, host int, sigs <-chan os.Signal) (status unix.WaitStatus, orphaned bool) {
	for {
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			if pid == server {
				return ws, false
			}
		}
		if os.Getppid() != host {
			return 0, true
		}
		<-sigs // SIGCHLD, or perhaps the host's death: look again
	}
}

// killDescendants kills the server's group and every process the shim is
// the parent of (its server, and orphans that left the group), again for
// each generation re-parented to it, and reaps them all.
func killDescendants(group int) {
	_ = unix.Kill(-group, unix.SIGKILL)
	for {
		for _, pid := range children() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.ECHILD {
			return
		}
	}
}

// children lists the processes whose parent is this one.
func children() []int {
	self := os.Getpid()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// "pid (comm) state ppid ..."; comm may hold spaces and parens.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(self) {
			out = append(out, pid)
		}
	}
	return out
}

// raise ends the shim with sig, so that the host sees the server's death
// as it was. The Go runtime keeps handlers of its own for some signals,
// so the default action is restored directly. A core dump of the shim
// would only be noise beside the server's.
func raise(sig unix.Signal) {
	signal.Reset()
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	var dfl [8]uintptr // a zero sigaction: SIG_DFL, no flags, nothing masked
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	_ = unix.Kill(os.Getpid(), sig)
	time.Sleep(time.Second) // a signal whose default is to do nothing
	unix.Exit(128 + int(sig))
}
