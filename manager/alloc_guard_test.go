package manager_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// allocServerEnv, set to "demo", makes the test binary the demo server on
// stdin/stdout instead of running tests (see init below); set to "chatty",
// the server of TestCallReturnsAfterItsServersLogs.
const allocServerEnv = "MCPVISOR_ALLOC_GUARD_SERVER"

// serveDemoIfAsked turns a re-executed test binary into the demo server (or
// the chatty one), so
// that the allocation guard talks to a server in another process without
// building one. TestMain calls it after proc.RunShimIfAsked: the server's
// shim, the same binary, sees the same environment.
func serveDemoIfAsked() {
	var err error
	switch os.Getenv(allocServerEnv) {
	case "demo":
		err = demo.Serve(context.Background(), os.Stdin, os.Stdout)
	case "chatty":
		err = serveChatty(oldProtocol{&mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout}})
	case "chatty-new":
		err = serveChatty(&mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout})
	case "newgen":
		err = serveNewgen()
	default:
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestCallAllocationsStayNearDirectSDK fails when Manager.Call allocates
// more than maxRatio times what a plain ClientSession.CallTool allocates
// for the same call: demo.echo {text = "x"}, as BenchmarkCallPath
// compares them, each path on its own stdio demo server process.
//
// The servers run out of process because testing.AllocsPerRun counts the
// allocations of the whole process: an in-memory server would add its own
// 165 or so allocations per call to both paths, and a ratio of those would let
// the manager grow by dozens of allocations before it moved.
//
// It counts allocations, not time, so load on the machine does not move
// it. Noise only adds allocations (a GC that empties a sync.Pool, a stray
// goroutine of an earlier test), so each path keeps its lowest count of a
// few rounds. Under the race detector both paths allocate a few more
// (sync.Pool drops a quarter of what is put back) and the ratio stays the
// same, so the guard holds in both builds.
func TestCallAllocationsStayNearDirectSDK(t *testing.T) {
	const (
		maxRatio = 1.20
		warmUp   = 100 // calls of each path before counting
		rounds   = 3
		runs     = 200 // calls of each path per round
	)
	p := newCallPaths(allocGuardServers(t))
	for range warmUp {
		require.NoError(t, p.manager())
		require.NoError(t, p.direct())
	}
	mgr, direct := math.Inf(1), math.Inf(1)
	for range rounds {
		mgr = min(mgr, allocsPerCall(t, p.manager, runs))
		direct = min(direct, allocsPerCall(t, p.direct, runs))
	}
	require.Positive(t, direct, "direct path allocations")
	ratio := mgr / direct
	t.Logf("allocations per call: manager %.0f, direct %.0f, ratio %.3f (limit %.2f)", mgr, direct, ratio, maxRatio)
	if ratio > maxRatio {
		t.Errorf("Manager.Call allocates %.0f per call, a direct ClientSession.CallTool %.0f: ratio %.3f > %.2f; "+
			"find the new allocations with go test -run '^$' -bench 'CallPath$' -benchtime 2000x -memprofile mem.out -memprofilerate 1 ./manager/",
			mgr, direct, ratio, maxRatio)
	}
}

// allocsPerCall is the number of allocations of one call of f, averaged
// over runs calls (testing.AllocsPerRun: one call first, GOMAXPROCS 1).
func allocsPerCall(t *testing.T, f func() error, runs int) float64 {
	t.Helper()
	var err error
	n := testing.AllocsPerRun(runs, func() {
		if e := f(); e != nil && err == nil {
			err = e
		}
	})
	require.NoError(t, err)
	return n
}

// allocGuardServers is benchServers' setup with the demo server run from
// the test binary: "demo" under a manager with the host's no-op telemetry,
// and a plain go-sdk client that has listed its tools, as the manager's
// discovery did. Both end with t.
func allocGuardServers(t *testing.T) benchSetup {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	m := newManager(t, manager.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	spec := manager.Spec{Transport: manager.TransportStdio, Command: []string{self},
		Env: map[string]string{allocServerEnv: "demo"},
		// No health ping lands among the counted calls.
		Timeouts: manager.Timeouts{HealthInterval: time.Hour}}
	require.NoError(t, m.Add("demo", spec))
	st, err := m.Wait(ctx, "demo", manager.StateConnected)
	require.NoError(t, err, "demo server under the manager (%+v)", st)

	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), allocServerEnv+"=demo")
	client := mcp.NewClient(&mcp.Implementation{Name: "alloc-guard", Version: "v0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}) // as the manager's
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "direct client")
	t.Cleanup(func() { _ = cs.Close() })
	_, err = cs.ListTools(ctx, nil) // the SDK caches the tools it has listed
	require.NoError(t, err, "direct client: tools/list")
	return benchSetup{m: m, cs: cs, managerPID: st.PID, directPID: cmd.Process.Pid}
}
