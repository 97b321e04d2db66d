package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
)

// testHostEnv makes the test binary a host in miniature (see TestMain): it
// holds the JSON command of one stdio server.
const testHostEnv = "MCPVISOR_TEST_HOST"

// runTestHost is the host of TestStdioHostKilledLeavesNoProcess: a manager
// with one server, which prints "ready PID" once the server is connected
// and then waits to be killed.
func runTestHost(command string) int {
	var argv []any
	if err := json.Unmarshal([]byte(command), &argv); err != nil {
		fmt.Fprintln(os.Stderr, "test host:", err)
		return 2
	}
	spec, err := config.DecodeSpec("stubborn", map[string]any{"command": argv}, config.DecodeOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "test host:", err)
		return 2
	}
	m := manager.New(manager.Options{})
	if err := m.Add("stubborn", spec); err != nil {
		fmt.Fprintln(os.Stderr, "test host:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := m.Wait(ctx, "stubborn", manager.StateConnected)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test host:", err)
		return 2
	}
	fmt.Printf("ready %d\n", st.PID)
	time.Sleep(time.Hour) // until the test kills us
	return 0
}

// No process started for a server outlives a host killed with SIGKILL: not
// the server (which ignores stdin EOF and SIGTERM), not its grandchild,
// not the shim between them.
func TestStdioHostKilledLeavesNoProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("fault tier: real processes")
	}
	bin := fakemcptest.Build(t)
	command, err := json.Marshal([]string{bin, "--no-exit-on-stdin-eof", "--ignore-sigterm", "--spawn-grandchild"})
	require.NoError(t, err)
	self, err := os.Executable()
	require.NoError(t, err)

	var stdout, stderr testutil.SyncBuffer
	host := exec.Command(self)
	host.Env = append(os.Environ(), testHostEnv+"="+string(command))
	host.Stdout, host.Stderr = &stdout, &stderr
	require.NoError(t, host.Start())
	hostDone := make(chan struct{})
	go func() {
		defer close(hostDone)
		_ = host.Wait()
	}()
	t.Cleanup(func() {
		_ = host.Process.Kill()
		<-hostDone
	})

	var server int
	waitUntil(t, 30*time.Second, "the host's server to connect", func() bool {
		_, after, ok := strings.Cut(stdout.String(), "ready ")
		if ok {
			server, _ = strconv.Atoi(strings.TrimSpace(after))
		}
		return server > 0
	})
	waitUntil(t, 10*time.Second, "the grandchild to start", func() bool {
		return len(groupRunning(t, server)) >= 2
	})
	started := descendants(t, host.Process.Pid)
	require.GreaterOrEqual(t, len(started), 2, "server and grandchild run under the host")

	require.NoError(t, host.Process.Kill())
	<-hostDone
	if !assert.Eventually(t, func() bool { return len(stillRunning(t, started)) == 0 }, 5*time.Second, 20*time.Millisecond) {
		left := stillRunning(t, started)
		for _, p := range left {
			_ = signal(p.pid, syscall.SIGKILL) // not ours to leave behind
		}
		t.Fatalf("still running 5s after the host was killed (server %d): %v; host stderr: %s", server, left, stderr.String())
	}
}

// descendants lists the processes under pid, its children's children
// included.
func descendants(t *testing.T, pid int) []procStat {
	procs := readProcs(t)
	under := map[int]bool{pid: true}
	var out []procStat
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if under[p.ppid] && !under[p.pid] {
				under[p.pid] = true
				out = append(out, p)
				grew = true
			}
		}
	}
	return out
}

// stillRunning returns those of procs that still run (zombies do not).
func stillRunning(t *testing.T, procs []procStat) []procStat {
	want := map[int]bool{}
	for _, p := range procs {
		want[p.pid] = true
	}
	var out []procStat
	for _, p := range readProcs(t) {
		if want[p.pid] && p.state != 'Z' {
			out = append(out, p)
		}
	}
	return out
}

// waitUntil polls cond until it holds, failing t after wait.
func waitUntil(t *testing.T, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, wait, 20*time.Millisecond, "waited %s for %s", wait, what)
}
