//go:build linux

package luaapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
)

// memoryChild is the binary to run chunks in: this one, or, when it was
// built with the race detector (whose shadow memory is resident too and
// grows with the heap), the package's tests built without it.
func memoryChild(t *testing.T) string {
	exe, err := os.Executable()
	require.NoError(t, err)
	if !testutil.RaceEnabled() {
		return exe
	}
	plain := filepath.Join(t.TempDir(), "luaapi.test")
	build := exec.Command("go", "test", "-c", "-o", plain, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go test -c: %s", out)
	return plain
}

// peakKiB is how the child says its peak resident memory.
var peakKiB = regexp.MustCompile(`peak KiB: (\d+)`)

// Every way Lua has to make memory, used without restraint, is stopped
// near the memory limit: the process's peak resident memory stays within
// 1.5 times the limit. Without sizing large values before they are made,
// a doubled string went past 8 GiB under a 1 GiB limit, as fast as the
// kernel could give pages.
func TestMemoryLimitHolds(t *testing.T) {
	exe := memoryChild(t)
	for _, tt := range []struct{ name, src string }{
		{"concatenation", `local s = "x" for i = 1, 40 do s = s .. s end return #s`},
		{"concatenation of many", `local s = "x" for i = 1, 40 do s = s .. "-" .. s .. s end return #s`},
		{"table.concat", `local s = "x" for i = 1, 40 do s = table.concat({s, s, s}) end return #s`},
		{"string.rep", `local t = {} for i = 1, 1000 do t[i] = string.rep("x", 16 * 1024 * 1024) end return #t`},
		{"string.format", `local s = "x" for i = 1, 40 do s = string.format("%s%s", s, s) end return #s`},
		{"table growth", `local t = {} for i = 1, 1e9 do t[i] = i end return #t`},
		{"table.insert", `local t = {} for i = 1, 1e9 do table.insert(t, i) end return #t`},
		{"string keys", `local t = {} for i = 1, 1e9 do t["k" .. i] = i end return #t`},
		{"table of tables", `local t = {} for i = 1, 1e9 do t[i] = {i} end return #t`},
		{"json.decode", `local s = "[" .. string.rep("[1],", 4e6) .. "1]" return #json.decode(s)`},
		{"json.decode doubling", `local s = "1" for i = 1, 40 do s = "[" .. s .. "," .. s .. "]" json.decode(s) end return #s`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), memoryChildEnv+"="+tt.src)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "the chunk ran to its end: %s", out)
			require.Equal(t, 3, ee.ExitCode(), "the chunk was not stopped for memory: %s", out)
			m := peakKiB.FindSubmatch(out)
			require.NotNil(t, m, "the child did not say its peak: %s", out)
			kib, err := strconv.ParseInt(string(m[1]), 10, 64)
			require.NoError(t, err)
			peak := kib << 10
			t.Logf("peak %d MiB: %s", peak>>20, out)
			require.LessOrEqual(t, peak, int64(memoryChildLimit)*3/2, "peak resident memory %d MiB, limit %d MiB", peak>>20, memoryChildLimit>>20)
		})
	}
}
