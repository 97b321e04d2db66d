package manager_test

// Benchmarks of the call path: the manager's Call against a plain go-sdk
// ClientSession.CallTool, each on its own stdio process of the same
// binary (`mcpvisor demo-server`, built once per benchmark). Run them with
//
//	go test -run '^$' -bench CallPath -benchtime 3000x ./manager/
//
// The host's GOGC comes from the environment as usual; the servers' GOGC
// is pinned (MCPVISOR_BENCH_CHILD_GOGC, default 100) so that varying GOGC
// measures the host alone.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// benchSetup is the demo server run twice over stdio: once under a manager
// (as "demo") and once under a plain go-sdk client, which has listed its
// tools as the manager's discovery did.
type benchSetup struct {
	m                     *manager.Manager
	cs                    *mcp.ClientSession
	managerPID, directPID int // the two server processes
}

// benchServers starts both servers; they are stopped when b ends.
func benchServers(b *testing.B) benchSetup {
	b.Helper()
	bin := testutil.BuildMcpvisor(b)
	childGOGC := os.Getenv("MCPVISOR_BENCH_CHILD_GOGC")
	if childGOGC == "" {
		childGOGC = "100"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// No-op telemetry providers, as the host passes when no exporter is set.
	m := manager.New(manager.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			b.Errorf("manager.Close: %v", err)
		}
	})
	spec := manager.Spec{Transport: manager.TransportStdio, Command: []string{bin, "demo-server"},
		Env: map[string]string{"GOGC": childGOGC}}
	if err := m.Add("demo", spec); err != nil {
		b.Fatal(err)
	}
	st, err := m.Wait(ctx, "demo", manager.StateConnected)
	if err != nil {
		b.Fatalf("demo server: %v (%+v)", err, st)
	}

	cmd := exec.Command(bin, "demo-server")
	cmd.Env = append(os.Environ(), "GOGC="+childGOGC)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}) // as the manager's
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("direct client: %v", err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	if _, err := cs.ListTools(ctx, nil); err != nil { // the SDK caches tools it has listed
		b.Fatalf("direct client: tools/list: %v", err)
	}
	return benchSetup{m: m, cs: cs, managerPID: st.PID, directPID: cmd.Process.Pid}
}

// callPaths are the two ways to call demo.echo being compared.
type callPaths struct {
	manager, direct func() error
}

func newCallPaths(setup benchSetup) callPaths {
	m, cs := setup.m, setup.cs
	ctx := context.Background()
	return callPaths{
		manager: func() error {
			res, err := m.Call(ctx, "demo.echo", map[string]any{"text": "x"}, manager.CallOptions{})
			return checkEcho("manager path", res, err)
		},
		direct: func() error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			return checkEcho("direct path", res, err)
		},
	}
}

func checkEcho(path string, res *mcp.CallToolResult, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if res.IsError || len(res.Content) != 1 {
		return fmt.Errorf("%s: unexpected result %+v", path, res)
	}
	return nil
}

// BenchmarkCallPath compares Manager.Call("demo.echo") with a direct
// ClientSession.CallTool on an identical stdio server, one call of each per
// iteration, alternating which goes first, so both see the same GC and
// scheduler weather. ns/op is the manager path's mean. Reported:
//
//   - manager-p50-µs, direct-p50-µs and p50-ratio (manager/direct; the
//     target is ≤ 1.10);
//   - manager-allocs/call, direct-allocs/call and allocs-ratio (target ≤
//     1.20), and B/call of each, counted with runtime.MemStats around
//     batches of 50 calls of one path after the timed loop (every goroutine
//     of the process counts, the SDK's reader included);
//   - gc/kcall: collections per thousand calls (both paths) in the timed loop.
func BenchmarkCallPath(b *testing.B) {
	p := newCallPaths(benchServers(b))
	b.Run("echo", func(b *testing.B) {
		for range 200 { // warm up both sessions and the allocator
			mustCall(b, p.manager)
			mustCall(b, p.direct)
		}
		mgrTimes := make([]time.Duration, 0, b.N)
		directTimes := make([]time.Duration, 0, b.N)
		timed := func(f func() error) time.Duration {
			start := time.Now()
			mustCall(b, f)
			return time.Since(start)
		}
		var gc0, gc1 runtime.MemStats
		runtime.ReadMemStats(&gc0)
		b.ResetTimer()
		for i := range b.N {
			if i%2 == 0 {
				mgrTimes = append(mgrTimes, timed(p.manager))
				directTimes = append(directTimes, timed(p.direct))
			} else {
				directTimes = append(directTimes, timed(p.direct))
				mgrTimes = append(mgrTimes, timed(p.manager))
			}
		}
		b.StopTimer()
		runtime.ReadMemStats(&gc1)

		mgrAllocs, mgrBytes, directAllocs, directBytes := countAllocs(b, p, b.N)
		var total time.Duration
		for _, d := range mgrTimes {
			total += d
		}
		mgrP50, directP50 := testutil.Percentile(mgrTimes, 50), testutil.Percentile(directTimes, 50)
		b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
		b.ReportMetric(float64(mgrP50.Nanoseconds())/1e3, "manager-p50-µs")
		b.ReportMetric(float64(directP50.Nanoseconds())/1e3, "direct-p50-µs")
		b.ReportMetric(float64(mgrP50)/float64(directP50), "p50-ratio")
		b.ReportMetric(float64(testutil.Percentile(mgrTimes, 99).Nanoseconds())/1e3, "manager-p99-µs")
		b.ReportMetric(float64(testutil.Percentile(directTimes, 99).Nanoseconds())/1e3, "direct-p99-µs")
		b.ReportMetric(mgrAllocs, "manager-allocs/call")
		b.ReportMetric(directAllocs, "direct-allocs/call")
		b.ReportMetric(mgrAllocs/directAllocs, "allocs-ratio")
		b.ReportMetric(mgrBytes, "manager-B/call")
		b.ReportMetric(directBytes, "direct-B/call")
		b.ReportMetric(float64(gc1.NumGC-gc0.NumGC)*1000/float64(2*b.N), "gc/kcall")
	})
}

// BenchmarkCallPathParallel measures throughput: 16 goroutines (8 per
// core here) calling demo.echo on one session at once, through the manager
// or directly. The two paths alternate in rounds of b.N/rounds calls each,
// so both see the same weather. ns/op is the manager path's wall time per
// call (the inverse of its throughput). Reported: manager-calls/s,
// direct-calls/s, throughput-ratio (manager/direct); the CPU time each
// call costs the host process (getrusage, all threads) and its server
// process (/proc/PID/stat, 10 ms ticks), per path; and gc/kcall and
// gc-pause-µs/kcall over both paths, and the host's memory: peak RSS of
// the whole test process (host-maxrss-MiB) and the heap it holds from the
// OS at the end (host-heap-sys-MiB). CPU per call is the figure least
// disturbed by other load on the machine.
func BenchmarkCallPathParallel(b *testing.B) {
	setup := benchServers(b)
	p := newCallPaths(setup)
	serverPIDs := [2]int{setup.managerPID, setup.directPID}
	b.Run("echo", func(b *testing.B) {
		const callers = 16
		for range 200 {
			mustCall(b, p.manager)
			mustCall(b, p.direct)
		}
		rounds := min(max(b.N/500, 1), 10)
		var elapsed, hostCPU, serverCPU [2]time.Duration
		var calls [2]int
		var gc0, gc1 runtime.MemStats
		runtime.ReadMemStats(&gc0)
		b.ResetTimer()
		for r := range rounds {
			n := b.N / rounds
			if r == rounds-1 {
				n = b.N - n*(rounds-1)
			}
			order := []int{0, 1}
			if r%2 == 1 {
				order = []int{1, 0}
			}
			for _, i := range order {
				f := p.manager
				if i == 1 {
					f = p.direct
				}
				host0, server0 := testutil.SelfCPU(), procCPU(b, serverPIDs[i])
				elapsed[i] += testutil.Hammer(b, f, n, callers)
				hostCPU[i] += testutil.SelfCPU() - host0
				serverCPU[i] += procCPU(b, serverPIDs[i]) - server0
				calls[i] += n
			}
		}
		b.StopTimer()
		runtime.ReadMemStats(&gc1)
		mgr := float64(calls[0]) / elapsed[0].Seconds()
		direct := float64(calls[1]) / elapsed[1].Seconds()
		b.ReportMetric(float64(elapsed[0].Nanoseconds())/float64(calls[0]), "ns/op")
		b.ReportMetric(mgr, "manager-calls/s")
		b.ReportMetric(direct, "direct-calls/s")
		b.ReportMetric(mgr/direct, "throughput-ratio")
		perCall := func(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
		b.ReportMetric(perCall(hostCPU[0], calls[0]), "manager-host-cpu-µs/call")
		b.ReportMetric(perCall(hostCPU[1], calls[1]), "direct-host-cpu-µs/call")
		b.ReportMetric(perCall(serverCPU[0], calls[0]), "manager-server-cpu-µs/call")
		b.ReportMetric(perCall(serverCPU[1], calls[1]), "direct-server-cpu-µs/call")
		kcalls := float64(calls[0]+calls[1]) / 1000
		b.ReportMetric(float64(gc1.NumGC-gc0.NumGC)/kcalls, "gc/kcall")
		b.ReportMetric(float64(gc1.PauseTotalNs-gc0.PauseTotalNs)/1e3/kcalls, "gc-pause-µs/kcall")
		if peak := testutil.PeakRSS(); peak > 0 {
			b.ReportMetric(float64(peak)/(1<<20), "host-maxrss-MiB") // peak of the whole run
		}
		b.ReportMetric(float64(gc1.HeapSys)/(1<<20), "host-heap-sys-MiB")
	})
}

// procCPU is the CPU time (utime + stime) process pid has used, from
// /proc/PID/stat in clock ticks of 10 ms (USER_HZ is 100 on Linux).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("server process %d: %v", pid, err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // f[0] is field 3, state
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, s)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// countAllocs counts heap allocations per call of each path, in
// alternating batches of 50 calls, about n calls of each (at least 100, at
// most 2000).
func countAllocs(b *testing.B, p callPaths, n int) (mgrAllocs, mgrBytes, directAllocs, directBytes float64) {
	const batch = 50
	rounds := min(max(n, 100), 2000) / batch
	var mallocs, bytes [2]uint64
	var before, after runtime.MemStats
	for range rounds {
		for i, f := range []func() error{p.manager, p.direct} {
			runtime.ReadMemStats(&before)
			for range batch {
				mustCall(b, f)
			}
			runtime.ReadMemStats(&after)
			mallocs[i] += after.Mallocs - before.Mallocs
			bytes[i] += after.TotalAlloc - before.TotalAlloc
		}
	}
	calls := float64(rounds * batch)
	return float64(mallocs[0]) / calls, float64(bytes[0]) / calls, float64(mallocs[1]) / calls, float64(bytes[1]) / calls
}

func mustCall(b *testing.B, f func() error) {
	if err := f(); err != nil {
		b.Fatal(err)
	}
}
