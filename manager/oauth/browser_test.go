package oauth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Only http and https URLs are handed to a browser command; a command
// that exits at once (as xdg-open does) has been reaped when the login
// is over.
func TestOpenerOpensOnlyHTTPAndReaps(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "browser")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"$1\" >> \""+ran+"\"\n"), 0o755))

	var o opener
	require.False(t, o.open(t.Context(), "file:///etc/passwd", [][]string{{script, "file:///etc/passwd"}}))
	require.NoFileExists(t, ran)

	require.True(t, o.open(t.Context(), "https://as.example/authorize", [][]string{{"/no/such/browser"}, {script, "https://as.example/authorize"}}))
	o.wait()
	require.Len(t, o.running, 1)
	select {
	case <-o.running[0].Done():
	default:
		t.Fatal("the browser command was not reaped")
	}
	got, err := os.ReadFile(ran)
	require.NoError(t, err)
	require.Equal(t, "https://as.example/authorize\n", string(got))
}
