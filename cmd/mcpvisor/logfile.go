package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// logFileMax is the size past which the log file is moved to
// mcpvisor.log.1 when the REPL starts, so it does not grow for ever.
const logFileMax = 10 << 20

// stateDir is $XDG_STATE_HOME/mcpvisor, or ~/.local/state/mcpvisor, made
// if missing.
func stateDir() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	dir = filepath.Join(dir, "mcpvisor")
	return dir, os.MkdirAll(dir, 0o700)
}

// openLogFile opens the REPL's log file for appending.
func openLogFile() (*os.File, error) {
	dir, err := stateDir()
	if err != nil {
		return nil, fmt.Errorf("no log file: %w", err)
	}
	path := filepath.Join(dir, "mcpvisor.log")
	if fi, err := os.Stat(path); err == nil && fi.Size() > logFileMax {
		_ = os.Rename(path, path+".1") // if it fails, the file keeps growing
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}
