package luaapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// memoryChildEnv turns the test binary into a host that runs the Lua chunk
// in it under memoryChildLimit and exits: 0 if the chunk returned, 3 if it
// was stopped for memory, 1 otherwise (see TestMain).
const memoryChildEnv = "LUAAPI_TEST_MEMORY_CHUNK"

// memoryChildLimit is the child's memory limit: small, so that the tests
// stay light, and far above what the child needs to start.
const memoryChildLimit = 128 << 20

func runMemoryChild(src string) int {
	m := manager.New(manager.Options{})
	rt, err := luaapi.New(luaapi.Options{Manager: m, MemoryLimit: memoryChildLimit, Stdout: os.Stderr})
	if err != nil {
		return 1
	}
	_, err = rt.Exec(context.Background(), src, "bomb")
	fmt.Fprintln(os.Stderr, err)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, luaapi.ErrMemoryLimit):
		return 3
	}
	return 1
}

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
			peak := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10 // KiB on Linux
			t.Logf("peak %d MiB: %s", peak>>20, out)
			require.LessOrEqual(t, peak, int64(memoryChildLimit)*3/2, "peak resident memory %d MiB, limit %d MiB", peak>>20, memoryChildLimit>>20)
		})
	}
}

// The growth of a table's array is sized before it happens only while
// gopher-lua's LTable starts with its metatable and its array: a new
// version that moves them must be looked at, or a growing table is left
// to the watchdog and overshoots the limit.
func TestTableArrayLayout(t *testing.T) {
	require.True(t, luaapi.ArraysReadable)
}
