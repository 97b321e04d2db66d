package main

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// The host raises GOGC to 400 unless the user chose one (BENCHMARKS.md §4).
func TestTuneGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Run("GOGC unset", func(t *testing.T) {
		t.Setenv("GOGC", "") // restores the variable after the test
		require.NoError(t, os.Unsetenv("GOGC"))
		debug.SetGCPercent(100)
		tuneGC()
		require.Equal(t, defaultGCPercent, debug.SetGCPercent(100))
	})
	t.Run("GOGC set by the user", func(t *testing.T) {
		t.Setenv("GOGC", "150")
		debug.SetGCPercent(150)
		tuneGC()
		require.Equal(t, 150, debug.SetGCPercent(100), "the user's GOGC is left alone")
	})
}
