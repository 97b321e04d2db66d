package pipeio

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// Reader reads f, a pipe; through the poller without the scheduler's
// system call bookkeeping when f does not block, else f itself.
func Reader(f *os.File) io.Reader {
	rc, ok := nonBlocking(f)
	if !ok {
		return f
	}
	return &reader{f: f, rc: rc}
}

// Writer writes f, a pipe; through the poller without the scheduler's
// system call bookkeeping when f does not block, else through fallback (f
// if nil). A write that fails is made again through fallback, whose
// answer is the one returned: for a new opening of stdout, os.Stdout, so
// that a client gone away ends the process as a write to stdout does.
func Writer(f *os.File, fallback io.Writer) io.Writer {
	if fallback == nil {
		fallback = f
	}
	rc, ok := nonBlocking(f)
	if !ok {
		return fallback
	}
	return &writer{rc: rc, fallback: fallback}
}

// nonBlocking is f's raw connection when f does not block.
func nonBlocking(f *os.File) (syscall.RawConn, bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	var flags uintptr
	var errno syscall.Errno
	if rc.Control(func(fd uintptr) {
		flags, _, errno = syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
	}) != nil || errno != 0 {
		return nil, false
	}
	return rc, flags&syscall.O_NONBLOCK != 0
}

type reader struct {
	f  *os.File
	rc syscall.RawConn
}

func (r *reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return r.f.Read(p)
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the poller waits for more
			}
			n, errno = int(m), e
			return true
		}
	})
	switch {
	case err != nil || errno != 0:
		// Closed, past a deadline, or failed: as the file says it.
		return r.f.Read(p)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

type writer struct {
	rc       syscall.RawConn
	fallback io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		var n int
		var errno syscall.Errno
		rest := p[written:]
		err := w.rc.Write(func(fd uintptr) bool {
			for {
				m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
				switch e {
				case syscall.EINTR:
					continue
				case syscall.EAGAIN:
					return false // the poller waits for room
				}
				n, errno = int(m), e
				return true
			}
		})
		if err != nil || errno != 0 {
			m, err := w.fallback.Write(rest)
			return written + m, err
		}
		written += n
	}
	return written, nil
}
