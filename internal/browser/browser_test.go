//go:build linux

package browser

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://example.com/authorize?state=x", true},
		{"http://127.0.0.1:8080/", true},
		{"javascript:alert(1)", false},
		{"file:///etc/passwd", false},
		{"vscode://open", false},
		{"https:///no-host", false},
		{"/relative", false},
	} {
		require.Equal(t, tc.ok, CheckURL(tc.url) == nil, tc.url)
	}
}

// A started command runs in a process group of its own (a Ctrl-C at the
// terminal is not for it) and is reaped when it exits, with its status.
func TestStartOwnProcessGroupAndReaped(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "browser")
	exit := filepath.Join(dir, "exit")
	// The browser runs until told to exit, then fails.
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nwhile [ ! -e \""+exit+"\" ]; do sleep 0.01; done\nexit 3\n"), 0o755))
	p, err := Start([]string{script, "https://example.com"})
	require.NoError(t, err)

	pgid, err := syscall.Getpgid(p.pid)
	require.NoError(t, err)
	require.Equal(t, p.pid, pgid, "its own process group")
	select {
	case <-p.Done():
		t.Fatal("done before it exited")
	default:
	}

	require.NoError(t, os.WriteFile(exit, nil, 0o644))
	<-p.Done()
	var ee *exec.ExitError
	require.ErrorAs(t, p.Err(), &ee)
	require.Equal(t, 3, ee.ExitCode())
	_, err = os.Stat(fmt.Sprintf("/proc/%d", p.pid))
	require.True(t, os.IsNotExist(err), "reaped: no zombie left")
}
