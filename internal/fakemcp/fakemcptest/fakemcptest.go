// Package fakemcptest builds the fault-injecting MCP server in
// internal/fakemcp for tests.
//
//	bin := fakemcptest.Build(t)
//	cmd := exec.Command(bin, "--crash-after=3", "--exit-code=3")
//
// See the fakemcp command's documentation for its flags.
package fakemcptest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	once   sync.Once
	binDir string
	bin    string
	err    error
)

// Build compiles ./internal/fakemcp once per test binary and returns the path
// of the executable. It fails tb if the build fails. The binary lives in a
// fresh temporary directory; call [Cleanup] from TestMain to remove it, or
// leave it to the OS.
func Build(tb testing.TB) string {
	tb.Helper()
	once.Do(func() { bin, err = build() })
	if err != nil {
		tb.Fatalf("fakemcptest: %v", err)
	}
	return bin
}

// Cleanup removes the binary built by [Build], if any. Call it from TestMain
// after m.Run; Build must not be called afterwards.
func Cleanup() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

func build() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	binDir, err = os.MkdirTemp("", "fakemcp-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(binDir, "fakemcp")
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go tool is needed to build the fake server: %w", err)
	}
	cmd := exec.Command(goTool, "build", "-o", out, "./internal/fakemcp")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./internal/fakemcp: %v\n%s", err, b)
	}
	return out, nil
}

// moduleRoot walks up from the working directory (the test's package
// directory) to the directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod found above the working directory")
		}
		dir = parent
	}
}
