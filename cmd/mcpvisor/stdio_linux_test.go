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
func TestServeReadsAPipedStdinWithoutChangingIt(t *testing.T) {
	var p [2]int
	require.NoError(t, syscall.Pipe2(p[:], syscall.O_CLOEXEC)) // blocking, as a client hands it over
	stdin, w := os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "client")
	defer stdin.Close()

	f := reopen(stdin, os.O_RDONLY)
	require.NotNil(t, f, "a pipe is opened afresh")
	defer f.Close()
	assert.False(t, blocking(t, f), "serve's opening does not block")
	assert.True(t, blocking(t, stdin), "the client's description is left blocking")
	r, _ := pipes(stdin, io.Discard)

	go func() {
		_, _ = w.Write([]byte("{\"jsonrpc\":\"2.0\"}\n"))
		_ = w.Close()
	}()
	got, err := io.ReadAll(r)
	require.NoError(t, err, "the end of the input is an EOF")
	assert.Equal(t, "{\"jsonrpc\":\"2.0\"}\n", string(got))
}

// What is not a pipe (a file, a reader or writer that is no file) is
// read and written as it is.
func TestServeLeavesOtherStdioAlone(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	require.NoError(t, err)
	defer f.Close()
	r, w := pipes(f, f)
	assert.Same(t, f, r)
	assert.Same(t, f, w)
	var sr io.Reader = strings.NewReader("{}\n")
	var bw io.Writer = &strings.Builder{}
	r, w = pipes(sr, bw)
	assert.Same(t, sr, r)
	assert.Same(t, bw, w)
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

// A piped stdout is written through an opening of serve's own, which
// does not block, while the client's description keeps blocking; what
// serve writes reaches the client whole.
func TestServeWritesAPipedStdoutWithoutChangingIt(t *testing.T) {
	var p [2]int
	require.NoError(t, syscall.Pipe2(p[:], syscall.O_CLOEXEC))
	client, stdout := os.NewFile(uintptr(p[0]), "client"), os.NewFile(uintptr(p[1]), "stdout")
	defer client.Close()

	f := reopen(stdout, os.O_WRONLY)
	require.NotNil(t, f, "a pipe is opened afresh")
	assert.False(t, blocking(t, f), "serve's opening does not block")
	require.NoError(t, f.Close())
	assert.True(t, blocking(t, stdout), "the client's description is left blocking")

	_, w := pipes(strings.NewReader(""), stdout)
	msg := strings.Repeat("x", 200<<10) + "\n" // more than a pipe holds
	done := make(chan error, 1)
	go func() {
		_, err := w.Write([]byte(msg))
		done <- err
	}()
	got := make([]byte, len(msg))
	_, err := io.ReadFull(client, got)
	require.NoError(t, err)
	require.NoError(t, <-done)
	assert.Equal(t, msg, string(got))
	require.NoError(t, stdout.Close())
}
