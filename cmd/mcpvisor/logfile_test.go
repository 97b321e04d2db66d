package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The log file is under $XDG_STATE_HOME, or ~/.local/state without it.
func TestLogFileLocation(t *testing.T) {
	state, home := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", state)
	f, err := openLogFile()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, filepath.Join(state, "mcpvisor", "mcpvisor.log"), f.Name())

	t.Setenv("XDG_STATE_HOME", "")
	f, err = openLogFile()
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.Equal(t, filepath.Join(home, ".local", "state", "mcpvisor", "mcpvisor.log"), f.Name())
}
