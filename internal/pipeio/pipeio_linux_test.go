package pipeio_test

import (
	"bytes"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/pipeio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pipe is a pipe as os.Pipe makes it: both ends without blocking.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

// What is written, more than a pipe holds at once, arrives whole and in
// order, and then the end: the writer waits for room, the reader for data.
func TestPipeCarriesEverythingThenTheEnd(t *testing.T) {
	r, w := pipe(t)
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: the pipe holds 64 KiB
	done := make(chan error, 1)
	go func() {
		_, err := pipeio.Writer(w, nil).Write(want)
		_ = w.Close()
		done <- err
	}()
	got, err := io.ReadAll(pipeio.Reader(r))
	require.NoError(t, err)
	require.NoError(t, <-done)
	assert.True(t, bytes.Equal(want, got), "got %d bytes of %d", len(got), len(want))
}

// A write to a pipe no one reads fails as the file's does (through the
// fallback, here the file itself), with what was not written.
func TestWriteToABrokenPipeFailsAsTheFile(t *testing.T) {
	r, w := pipe(t)
	require.NoError(t, r.Close())
	n, err := pipeio.Writer(w, nil).Write([]byte("x\n"))
	assert.Zero(t, n)
	var pe *os.PathError
	require.ErrorAs(t, err, &pe)
	assert.ErrorIs(t, err, syscall.EPIPE)
}

// A failed write is made again through the fallback, whose answer is the
// one the caller gets.
func TestFailedWriteGoesToTheFallback(t *testing.T) {
	r, w := pipe(t)
	require.NoError(t, r.Close())
	var fallback bytes.Buffer
	n, err := pipeio.Writer(w, &fallback).Write([]byte("x\n"))
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, "x\n", fallback.String())
}

// A read deadline and a closed file end a read as they end the file's.
func TestReadEndsAsTheFilesRead(t *testing.T) {
	r, _ := pipe(t)
	require.NoError(t, r.SetReadDeadline(time.Now().Add(10*time.Millisecond)))
	_, err := pipeio.Reader(r).Read(make([]byte, 8))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded)

	r2, _ := pipe(t)
	rd := pipeio.Reader(r2)
	require.NoError(t, r2.Close())
	_, err = rd.Read(make([]byte, 8))
	assert.ErrorIs(t, err, os.ErrClosed)
}

// A file that blocks is read and written as it is (or through the
// fallback): only the poller may wait.
func TestBlockingFileIsLeftAsItIs(t *testing.T) {
	var p [2]int
	require.NoError(t, syscall.Pipe2(p[:], syscall.O_CLOEXEC))
	r, w := os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	defer r.Close()
	defer w.Close()
	assert.Same(t, r, pipeio.Reader(r))
	assert.Same(t, w, pipeio.Writer(w, nil))
	var fallback bytes.Buffer
	assert.Same(t, &fallback, pipeio.Writer(w, &fallback))
}
