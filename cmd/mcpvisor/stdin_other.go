//go:build !linux

package main

import "io"

// pollable is stdin as serve reads it: as it is (a pipe is opened afresh
// without blocking only on Linux, through /proc).
func pollable(stdin io.Reader) io.Reader { return stdin }
