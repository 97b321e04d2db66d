//go:build !linux

package main

import "io"

// pipes are stdin and stdout as serve reads and writes them: as they are
// (pipes are opened afresh without blocking only on Linux, through /proc).
func pipes(stdin io.Reader, stdout io.Writer) (io.Reader, io.Writer) { return stdin, stdout }
