//go:build unix

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize sends on c when the terminal's size changes.
func notifyResize(c chan os.Signal) { signal.Notify(c, syscall.SIGWINCH) }
