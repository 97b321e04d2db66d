package luaapi_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
	// The peak of this process's own memory. (The rusage its parent gets
	// would count the parent's resident memory at the fork too.)
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if kib, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Fprintln(os.Stderr, "peak KiB:", strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kib), "kB")))
		}
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, luaapi.ErrMemoryLimit):
		return 3
	}
	return 1
}

// The growth of a table's array is sized before it happens only while
// gopher-lua's LTable starts with its metatable and its array: a new
// version that moves them must be looked at, or a growing table is left
// to the watchdog and overshoots the limit.
func TestTableArrayLayout(t *testing.T) {
	require.True(t, luaapi.ArraysReadable)
}

// The wrapped instruction handlers (sizes.go) rely on gopher-lua's
// instruction encoding and on its handlers' signature, which no API
// promises: they were checked against one version. An upgrade fails here
// until someone has checked them again and named the new version.
func TestWrappedHandlersMatchTheirGopherLua(t *testing.T) {
	const checked = "github.com/yuin/gopher-lua v1.1.2"
	mod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	require.Contains(t, string(mod), checked,
		"gopher-lua changed: check OP_CONCAT, OP_SETTABLE, OP_SETTABLEKS and OP_SETLIST's operands and the handlers' signature in sizes.go, then name the new version here")
}
