package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Percentile returns the p-th percentile (0–100) of ds, nearest-rank.
func Percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(i-1, 0)]
}

// Hammer makes n calls of f from callers goroutines at once and returns
// the wall time they took; the first error fails b.
func Hammer(b testing.TB, f func() error, n, callers int) time.Duration {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	for range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := f(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start)
}

// BuildMcpvisor builds ./cmd/mcpvisor of the module the test runs in into
// a temporary directory and returns the binary's path.
func BuildMcpvisor(tb testing.TB) string {
	tb.Helper()
	wd, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			tb.Fatalf("no go.mod above %s", wd)
		}
		root = parent
	}
	bin := filepath.Join(tb.TempDir(), "mcpvisor")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mcpvisor")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/mcpvisor: %v\n%s", err, out)
	}
	return bin
}
