package main

import (
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/mcpvisor/mcpvisor/internal/pipeio"
)

// pipes are stdin and stdout as serve reads and writes them: each, when
// it is a pipe, opened afresh without blocking, so that the runtime's
// poller waits for the client's next message (or for room to write)
// rather than a thread blocked in a read, and read and written without
// the scheduler's system call bookkeeping (see pipeio). A blocked read
// holds on to a processor, which the scheduler's monitor then takes back
// and hands to another thread; a system call wakes the monitor, which
// then polls every few microseconds: on a busy machine either costs a
// call more than the gateway's own work on it. The new openings are
// serve's own: the pipes' original descriptions, and their blocking
// mode, are left as they were for whoever else holds them, and a write
// that fails is made again on stdout itself, so that a client gone away
// ends serve as before. Anything else (a terminal, a file, a socket), or
// a pipe that cannot be opened again, is read or written as it is.
func pipes(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer) {
	if r := reopen(stdin, os.O_RDONLY); r != nil {
		stdin = pipeio.Reader(r)
	}
	if w := reopen(stdout, os.O_WRONLY); w != nil {
		stdout = pipeio.Writer(w, stdout)
	}
	return stdin, stdout
}

// reopen is std, if it is a pipe, opened afresh with mode and without
// blocking; nil if it is not a pipe or cannot be opened again.
func reopen(std any, mode int) *os.File {
	f, ok := std.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return nil
	}
	rc, err := f.SyscallConn() // not Fd, which would make f blocking
	if err != nil {
		return nil
	}
	var fd uintptr
	if rc.Control(func(d uintptr) { fd = d }) != nil {
		return nil
	}
	r, err := os.OpenFile("/proc/self/fd/"+strconv.FormatUint(uint64(fd), 10), mode|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	return r
}
