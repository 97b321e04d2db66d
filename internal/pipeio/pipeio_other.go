//go:build !linux

package pipeio

import (
	"io"
	"os"
)

// Reader reads f, a pipe: f itself (see the package doc; Linux only).
func Reader(f *os.File) io.Reader { return f }

// Writer writes f, a pipe: f itself, or fallback if not nil (see the
// package doc; Linux only).
func Writer(f *os.File, fallback io.Writer) io.Writer {
	if fallback != nil {
		return fallback
	}
	return f
}
