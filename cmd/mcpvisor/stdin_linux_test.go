package main

import (
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A client's pipe is read through an opening of serve's own: every byte
// and then the end come through it, and the pipe's own description stays
// blocking for whoever else holds it.
func TestPollableStdinReadsThePipeWithoutChangingIt(t *testing.T) {
	var p [2]int
	require.NoError(t, syscall.Pipe2(p[:], syscall.O_CLOEXEC)) // blocking, as a client hands it over
	stdin, w := os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "client")
	defer stdin.Close()

	r := pollable(stdin)
	require.NotSame(t, stdin, r, "a pipe is opened afresh")
	f, ok := r.(*os.File)
	require.True(t, ok)
	defer f.Close()
	assert.False(t, blocking(t, f), "serve's opening does not block")
	assert.True(t, blocking(t, stdin), "the client's description is left blocking")

	go func() {
		_, _ = w.Write([]byte("{\"jsonrpc\":\"2.0\"}\n"))
		_ = w.Close()
	}()
	got, err := io.ReadAll(r)
	require.NoError(t, err, "the end of the input is an EOF")
	assert.Equal(t, "{\"jsonrpc\":\"2.0\"}\n", string(got))
}

// What is not a pipe (a file, a reader that is no file) is read as it is.
func TestPollableStdinLeavesOtherInputAlone(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	require.NoError(t, err)
	defer f.Close()
	assert.Same(t, f, pollable(f))
	var r io.Reader = strings.NewReader("{}\n")
	assert.Same(t, r, pollable(r))
}

// blocking reports whether f's description lacks O_NONBLOCK.
func blocking(t *testing.T, f *os.File) bool {
	t.Helper()
	rc, err := f.SyscallConn()
	require.NoError(t, err)
	var flags int
	var ferr error
	require.NoError(t, rc.Control(func(fd uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		flags = int(r)
		if errno != 0 {
			ferr = errno
		}
	}))
	require.NoError(t, ferr)
	return flags&syscall.O_NONBLOCK == 0
}
