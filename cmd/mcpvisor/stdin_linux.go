package main

import (
	"io"
	"os"
	"strconv"
	"syscall"
)

// pollable is stdin as serve reads it: when stdin is a pipe, the pipe
// opened afresh for reading without blocking, so that the runtime's poller
// waits for the client's next message rather than a thread blocked in a
// read. A blocked read holds on to a processor, which the scheduler's
// monitor then takes back and hands to another thread, and keeps the
// monitor polling every few microseconds: on a busy machine that costs a
// call more than the gateway's own work on it. The new opening is serve's
// own: the pipe's original description, and its blocking mode, are left
// as they were for whoever else holds it. For anything else (a terminal, a
// file, a socket), or if the pipe cannot be opened again, stdin is read as
// it is.
func pollable(stdin io.Reader) io.Reader {
	f, ok := stdin.(*os.File)
	if !ok {
		return stdin
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return stdin
	}
	rc, err := f.SyscallConn() // not Fd, which would make f blocking
	if err != nil {
		return stdin
	}
	var fd uintptr
	if rc.Control(func(d uintptr) { fd = d }) != nil {
		return stdin
	}
	r, err := os.OpenFile("/proc/self/fd/"+strconv.FormatUint(uint64(fd), 10), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return stdin
	}
	return r
}
