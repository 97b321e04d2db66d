package manager_test

// Benchmarks of the connection lifecycle (issue 3): how fast a crashed
// stdio server is back, what 1000 HTTP servers cost the host, and how the
// backoff jitter spreads 1000 servers' reconnects. Run them with
//
//	go test -run '^$' -bench 'CrashToReconnect|ThousandHTTP|Jitter' -benchtime 1x ./manager/
//
// (BenchmarkCrashToReconnect wants more iterations, e.g. -benchtime 40x.)

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/endpoint"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// eventWaiter reads a manager's events for a benchmark.
type eventWaiter struct {
	tb  testing.TB
	sub *events.Subscription
}

func waitEvents(tb testing.TB, m *manager.Manager, queue int) eventWaiter {
	sub := m.Bus().Subscribe(events.SubscribeOptions{QueueSize: queue})
	tb.Cleanup(sub.Close)
	return eventWaiter{tb: tb, sub: sub}
}

// until returns server's events up to and including the first of kind,
// failing tb if it does not come within a minute or the subscriber lagged.
func (w eventWaiter) until(server string, kind events.Kind) []events.Event {
	w.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []events.Event
	for {
		e, err := w.sub.Recv(ctx)
		if err != nil {
			w.tb.Fatalf("waiting for %s of %q: %v; got %v", kind, server, err, got)
		}
		if e.Kind == events.KindLagged {
			w.tb.Fatalf("the benchmark's subscriber lagged: %v", e.Fields)
		}
		if e.Server != server {
			continue
		}
		got = append(got, e)
		if e.Kind == kind {
			return got
		}
	}
}

// BenchmarkCrashToReconnect measures how long a stdio server that crashed
// takes to be connected again, against what it cannot take less than: the
// backoff delay plus spawning and handshaking a fresh process, measured in
// the same run.
//
// The server is fakemcp --crash-after=1: each iteration calls its echo
// once, and it exits with status 1 right after answering. The crash
// instant is when that call returns; the end is the time of the server's
// connected event. The backoff is fixed at 50 ms (initial = max = 50ms,
// jitter 0; max = initial keeps the delay at 50 ms even for a session the
// manager judged unproven, and a session counts as proven after backoff.max,
// so each crash is waited for until the session is 60 ms old). The baseline
// is the same manager adding a second server of the same command and
// waiting for its connected event (spawn, handshake, discovery: exactly
// what the reconnect attempt does), then removing it; the two alternate in
// every iteration.
//
// Reported: ns/op (mean crash → connected), crash-p50-ms, spawn-p50-ms
// (fresh Add → connected), baseline-ms (50 ms + mean spawn), ratio (mean
// crash → connected / baseline; the target is ≤ 1.2), ratio-p50 (the same
// with medians), and where the crash → connected time goes, medians:
// detect-ms (crash → disconnected event), delay-ms (disconnected →
// connecting, the backoff wait) and attempt-ms (connecting → connected).
func BenchmarkCrashToReconnect(b *testing.B) {
	const backoff = 50 * time.Millisecond
	bin := fakemcptest.Build(b)
	m := newManager(b, manager.Options{})
	w := waitEvents(b, m, 4096)
	spec := decode(b, map[string]any{
		"command":  []any{bin, "--crash-after=1"},
		"backoff":  map[string]any{"initial": "50ms", "max": "50ms", "jitter": 0},
		"timeouts": map[string]any{"health_interval": "1h", "idle": 0},
	})
	if err := m.Add("crash", spec); err != nil {
		b.Fatal(err)
	}
	w.until("crash", events.KindConnected)

	ctx := context.Background()
	// crash makes the server exit and returns the times from the crash to
	// its disconnected, connecting and connected events.
	crash := func() (detect, delay, attempt, total time.Duration) {
		st, err := m.Status("crash")
		if err != nil {
			b.Fatal(err)
		}
		// Only a session older than backoff.max has proven itself and
		// restarts the schedule at its first delay.
		time.Sleep(time.Until(st.ConnectedAt.Add(backoff + 10*time.Millisecond)))
		if _, err := m.Call(ctx, "crash.echo", map[string]any{"text": "x"}, manager.CallOptions{}); err != nil {
			b.Fatalf("the call before the crash: %v", err)
		}
		t0 := time.Now()
		evs := w.until("crash", events.KindConnected)
		at := map[events.Kind]time.Time{}
		for _, e := range evs {
			at[e.Kind] = e.Time
			if e.Kind == events.KindBackoff && (e.Int("attempt") != 1 || e.Int("delay_ms") != backoff.Milliseconds()) {
				b.Fatalf("backoff event %v: want attempt 1 after a delay of %s", e.Fields, backoff)
			}
		}
		var got []events.Kind
		for _, e := range evs {
			if e.Kind != events.KindToolCall {
				got = append(got, e.Kind)
			}
		}
		if want := []events.Kind{events.KindDisconnected, events.KindBackoff, events.KindConnecting, events.KindConnected}; !slices.Equal(got, want) {
			b.Fatalf("after the crash: events %v, want %v", got, want)
		}
		con := at[events.KindConnected]
		return at[events.KindDisconnected].Sub(t0), at[events.KindConnecting].Sub(at[events.KindDisconnected]),
			con.Sub(at[events.KindConnecting]), con.Sub(t0)
	}
	// spawn adds a fresh server of the same command and returns the time
	// from Add to its connected event; it is removed afterwards.
	spawn := func() time.Duration {
		t0 := time.Now()
		if err := m.Add("fresh", spec); err != nil {
			b.Fatal(err)
		}
		evs := w.until("fresh", events.KindConnected)
		took := evs[len(evs)-1].Time.Sub(t0)
		done, err := m.Remove("fresh")
		if err != nil {
			b.Fatal(err)
		}
		<-done
		w.until("fresh", events.KindRemoved)
		return took
	}

	crash() // warm up: the page cache, the pools
	spawn()
	var detects, delays, attempts, totals, spawns []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 1 {
			spawns = append(spawns, spawn())
		}
		detect, delay, attempt, total := crash()
		detects, delays, attempts, totals = append(detects, detect), append(delays, delay), append(attempts, attempt), append(totals, total)
		if i%2 == 0 {
			spawns = append(spawns, spawn())
		}
	}
	b.StopTimer()

	meanTotal, meanSpawn := mean(totals), mean(spawns)
	baseline := backoff + meanSpawn
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(float64(meanTotal.Nanoseconds()), "ns/op")
	b.ReportMetric(msOf(testutil.Percentile(totals, 50)), "crash-p50-ms")
	b.ReportMetric(msOf(testutil.Percentile(spawns, 50)), "spawn-p50-ms")
	b.ReportMetric(msOf(baseline), "baseline-ms")
	b.ReportMetric(float64(meanTotal)/float64(baseline), "ratio")
	b.ReportMetric(float64(testutil.Percentile(totals, 50))/float64(backoff+testutil.Percentile(spawns, 50)), "ratio-p50")
	b.ReportMetric(msOf(testutil.Percentile(detects, 50)), "detect-ms")
	b.ReportMetric(msOf(testutil.Percentile(delays, 50)), "delay-ms")
	b.ReportMetric(msOf(testutil.Percentile(attempts, 50)), "attempt-ms")
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// ---- 1000 servers over streamable HTTP ----

// httpServers is how many servers BenchmarkThousandHTTPServers declares.
const httpServers = 1000

// httpHelperEnv carries the base URL to the helper process of
// BenchmarkThousandHTTPServers (TestThousandHTTPClientHelper).
const httpHelperEnv = "MCPVISOR_BENCH_HTTP_URL"

// loopbackMCP is one streamable HTTP handler of the demo server on
// loopback; every path is an endpoint of it, so /mcp/0 … /mcp/999 are 1000
// servers to the manager. It counts the TCP connections it accepts.
type loopbackMCP struct {
	url              string
	accepted, closed atomic.Int64
}

func newLoopbackMCP(b *testing.B) *loopbackMCP {
	l := &loopbackMCP{}
	srv := demo.NewServer()
	ts := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			l.accepted.Add(1)
		case http.StateClosed, http.StateHijacked:
			l.closed.Add(1)
		}
	}
	ts.Start()
	b.Cleanup(ts.Close)
	l.url = ts.URL
	return l
}

func (l *loopbackMCP) open() int64 { return l.accepted.Load() - l.closed.Load() }

// httpSpec declares endpoint i of base with pings far apart (health and
// keepalive 1h), so that no ping traffic runs while memory is measured.
func httpSpec(tb testing.TB, base string, i int) manager.Spec {
	return decode(tb, map[string]any{
		"url":      fmt.Sprintf("%s/mcp/%d", base, i),
		"timeouts": map[string]any{"health_interval": "1h", "keepalive": "1h"},
	})
}

// addHTTPServers declares n servers at base and waits, on the bus, until
// every one is connected. It returns how long that took and how many
// attempts failed on the way.
func addHTTPServers(tb testing.TB, m *manager.Manager, base string, n int) (took time.Duration, failures int) {
	tb.Helper()
	sub := m.Bus().Subscribe(events.SubscribeOptions{QueueSize: 8 * n})
	defer sub.Close()
	start := time.Now()
	for i := range n {
		if err := m.Add(fmt.Sprintf("h%04d", i), httpSpec(tb, base, i)); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	connected := make(map[string]bool, n)
	var last time.Time
	for len(connected) < n {
		e, err := sub.Recv(ctx)
		if err != nil {
			tb.Fatalf("%d of %d servers connected: %v", len(connected), n, err)
		}
		switch e.Kind {
		case events.KindLagged:
			tb.Fatalf("subscriber lagged: %v", e.Fields)
		case events.KindBackoff, events.KindCircuit:
			failures++
			if failures <= 3 {
				tb.Logf("%s %s: %v", e.Server, e.Kind, e.Fields["error"])
			}
		case events.KindConnected:
			connected[e.Server] = true
			last = e.Time
		}
	}
	return last.Sub(start), failures
}

// footprint is the process's heap in use and goroutines, measured after
// collecting twice and letting goroutines that are finishing finish.
type footprint struct {
	heap, stack uint64
	goroutines  int
}

func measure() footprint {
	// Goroutines of requests just answered are still unwinding: wait
	// (at most 3 s) until the count holds still over 100 ms.
	prev := runtime.NumGoroutine()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == prev {
			break
		}
		prev = n
	}
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return footprint{heap: ms.HeapInuse, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
}

// minus is the growth from base to f per server.
func (f footprint) minus(base footprint, n int) perServer {
	return perServer{
		Heap:       (float64(f.heap) - float64(base.heap)) / float64(n),
		Stack:      (float64(f.stack) - float64(base.stack)) / float64(n),
		Goroutines: float64(f.goroutines-base.goroutines) / float64(n),
	}
}

// BenchmarkThousandHTTPServers declares 1000 streamable HTTP servers —
// paths of one httptest server of the demo server in this process — in one
// manager and measures the time until all are connected and what they
// cost the host: heap (HeapInuse after two GCs) and goroutines per server.
// Health pings and keepalives are 1h apart, so none run meanwhile.
//
// pool=default is the manager as it is. The server side lives in this
// process too, so its share is measured first, alone: a helper process
// (this test binary running TestThousandHTTPClientHelper) declares the
// same 1000 servers in its own manager against this process's httptest
// server; while it holds them, this process's growth over its baseline is
// the server side's cost of 1000 sessions, as the manager uses them. Then
// the helper closes its manager and exits, a new baseline is taken, and
// this process's own manager declares the 1000 servers: its growth minus
// the server side's is the host's cost. The helper measures its own growth
// as well — the host's cost with the server in another process — which
// cross-checks the subtraction.
//
// Reported: ns/op (time until all 1000 are connected, in-process),
// heap-B/server and goroutines/server (in-process minus server side;
// targets ≤ 64 KiB and ≤ 6), stack-B/server (goroutine stacks, both sides),
// the helper's helper-heap-B/server, helper-goroutines/server and
// helper-connect-ms, the server side's server-heap-B/server and
// server-goroutines/server, conns-accepted (TCP connections the server
// accepted while the in-process manager connected), conns-open (still open
// once all were connected) and connect-failures (backoff or circuit events
// on the way).
//
// pool=1024 repeats the in-process connect through an Options.Dial that is
// the default HTTP dial with MaxIdleConnsPerHost raised from 64 to 1024,
// to show what the shared transport's idle limit does to 1000 servers on
// one host:port. It reports the time, the connections and the growth of
// both sides together (both-heap-B/server, both-goroutines/server).
func BenchmarkThousandHTTPServers(b *testing.B) {
	srv := newLoopbackMCP(b)
	b.Run("pool=default", func(b *testing.B) {
		var sum, server, helper perServer
		for range b.N {
			b.StopTimer()
			// 1. The server side alone, with the manager in a helper process.
			base := measure()
			res, closeIdle, stop := startHTTPHelper(b, srv.url)
			server = server.plus(measure().minus(base, httpServers))
			res.PoolIdle = closeIdle()
			stop()
			helper = helper.plus(res)
			// 2. Server and host in this process.
			sum = sum.plus(connectInProcess(b, srv, manager.Options{}))
		}
		n := float64(b.N)
		b.ReportMetric(float64(sum.Took.Nanoseconds())/n, "ns/op")
		b.ReportMetric((sum.Heap-server.Heap)/n, "heap-B/server")
		b.ReportMetric((sum.Goroutines-server.Goroutines)/n, "goroutines/server")
		b.ReportMetric(sum.Stack/n, "stack-B/server")
		b.ReportMetric(helper.Heap/n, "helper-heap-B/server")
		b.ReportMetric(helper.Goroutines/n, "helper-goroutines/server")
		b.ReportMetric((helper.Goroutines-helper.PoolIdle)/n, "helper-goroutines/server-no-idle-pool")
		b.ReportMetric(float64(helper.Took.Milliseconds())/n, "helper-connect-ms")
		b.ReportMetric(server.Heap/n, "server-heap-B/server")
		b.ReportMetric(server.Goroutines/n, "server-goroutines/server")
		b.ReportMetric(float64(sum.Accepted)/n, "conns-accepted")
		b.ReportMetric(float64(sum.Open)/n, "conns-open")
		b.ReportMetric(float64(sum.Failures)/n, "connect-failures")
	})
	b.Run("pool=1024", func(b *testing.B) {
		tr := endpoint.NewPool() // the host's pool, with room for every server's idle connections
		tr.MaxIdleConnsPerHost = 1024
		tr.ResponseHeaderTimeout = 30 * time.Second
		b.Cleanup(tr.CloseIdleConnections)
		dial := func(_ context.Context, _ string, spec manager.Spec) (mcp.Transport, error) {
			return &mcp.StreamableClientTransport{Endpoint: spec.URL, HTTPClient: &http.Client{Transport: tr},
				MaxRetries: 1, MaxEventSize: spec.MaxFrameBytes}, nil
		}
		var sum perServer
		for range b.N {
			sum = sum.plus(connectInProcess(b, srv, manager.Options{Dial: dial}))
			tr.CloseIdleConnections()
		}
		n := float64(b.N)
		b.ReportMetric(float64(sum.Took.Nanoseconds())/n, "ns/op")
		b.ReportMetric(sum.Heap/n, "both-heap-B/server")
		b.ReportMetric(sum.Goroutines/n, "both-goroutines/server")
		b.ReportMetric(float64(sum.Accepted)/n, "conns-accepted")
		b.ReportMetric(float64(sum.Open)/n, "conns-open")
		b.ReportMetric(float64(sum.Failures)/n, "connect-failures")
	})
}

// perServer is one measurement of httpServers servers: the growth per
// server, how long connecting all took, and what it took of TCP.
type perServer struct {
	Heap, Stack, Goroutines float64 // per server
	PoolIdle                float64 // of Goroutines: the shared pool's idle connections
	Took                    time.Duration
	Failures                int
	Accepted, Open          int64 // connections the server accepted, and had open at the end
}

func (p perServer) plus(q perServer) perServer {
	return perServer{Heap: p.Heap + q.Heap, Stack: p.Stack + q.Stack, Goroutines: p.Goroutines + q.Goroutines, PoolIdle: p.PoolIdle + q.PoolIdle,
		Took: p.Took + q.Took, Failures: p.Failures + q.Failures, Accepted: p.Accepted + q.Accepted, Open: p.Open + q.Open}
}

// connectInProcess declares the servers in a new manager of this process,
// timing only that, measures this process's growth (server and host) and
// closes the manager. The timer is running when it is called.
func connectInProcess(b *testing.B, srv *loopbackMCP, opts manager.Options) perServer {
	b.StopTimer()
	waitConnsClosed(b, srv)
	base := measure()
	acc0 := srv.accepted.Load()
	m := manager.New(opts)
	b.StartTimer()
	took, failures := addHTTPServers(b, m, srv.url, httpServers)
	b.StopTimer()
	p := measure().minus(base, httpServers)
	p.Took, p.Failures = took, failures

	p.Accepted, p.Open = srv.accepted.Load()-acc0, srv.open()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	return p
}

// startHTTPHelper runs TestThousandHTTPClientHelper in a child process
// against base and returns its own growth once its manager holds every
// session; closeIdle has it close its pool's idle connections and returns
// the goroutines per server that freed; stop closes the child's stdin,
// which makes it close its manager and exit, and waits for that.
func startHTTPHelper(b *testing.B, base string) (res perServer, closeIdle func() float64, stop func()) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestThousandHTTPClientHelper$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), httpHelperEnv+"="+base)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	found := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "helper-result: "); ok {
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				b.Fatalf("helper: %v: %q", err, line)
			}
			found = true
			break
		}
	}
	stop = func() {
		stdin.Close()
		_, _ = io.Copy(io.Discard, stdout)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("helper: %v\n%s%s", err, out.String(), stderr.String())
		}
	}
	if !found {
		stop()
		b.Fatalf("helper ended without a result:\n%s%s", out.String(), stderr.String())
	}
	closeIdle = func() float64 {
		if _, err := io.WriteString(stdin, "close-idle\n"); err != nil {
			b.Fatal(err)
		}
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "helper-idle-pool: "); ok {
				n, err := strconv.ParseFloat(rest, 64)
				if err != nil {
					b.Fatalf("helper: %v: %q", err, rest)
				}
				return n
			}
		}
		stop()
		b.Fatalf("helper ended without its idle pool figure:\n%s%s", out.String(), stderr.String())
		return 0
	}
	return res, closeIdle, stop
}

// waitConnsClosed waits (at most 10 s) until the helper's connections to
// srv are gone, so that they are not in the next baseline's absence.
func waitConnsClosed(b *testing.B, srv *loopbackMCP) {
	require.EventuallyWithT(b, func(c *assert.CollectT) {
		assert.Zero(c, srv.open(), "connections of the helper still open")
	}, 10*time.Second, 10*time.Millisecond)
}

// TestThousandHTTPClientHelper is the helper process of
// BenchmarkThousandHTTPServers, not a test: it skips unless the benchmark
// started it. It declares the benchmark's 1000 servers against the URL it
// was given, measures its own growth, prints it, and holds the sessions
// until its stdin closes.
func TestThousandHTTPClientHelper(t *testing.T) {
	base := os.Getenv(httpHelperEnv)
	if base == "" {
		t.Skip("the helper process of BenchmarkThousandHTTPServers")
	}
	before := measure()
	m := newManager(t, manager.Options{})
	took, failures := addHTTPServers(t, m, base, httpServers)
	after := measure()
	res := after.minus(before, httpServers)
	res.Took, res.Failures = took, failures
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("helper-result: %s\n", out)

	// Once the benchmark has measured the server side, it asks for the
	// host's cost without the shared pool's idle connections: up to
	// MaxIdleConnsPerHost (64) of the connect storm's POSTs stay idle for
	// 90s, 2 goroutines each, the host's rather than any server's.
	in := bufio.NewScanner(os.Stdin)
	if in.Scan() && in.Text() == "close-idle" {
		manager.CloseIdleHTTP(m)
		fmt.Printf("helper-idle-pool: %g\n", res.Goroutines-measure().minus(before, httpServers).Goroutines)
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// ---- jitter ----

// BenchmarkJitterSpread reports the figures of TestReconnectJitterSpread
// (1000 servers failing at once, default backoff and breaker, fake time):
// the busiest one-second window over the average second of reconnect
// attempts, per phase, and how wide each backoff wave and the probe wave
// are. A synctest bubble needs a *testing.T, so each iteration runs the
// test in a child process (this test binary) that writes its figures to a
// file; ns/op is that child's run time.
func BenchmarkJitterSpread(b *testing.B) {
	benchmarkSynctestReport(b, "TestReconnectJitterSpread", jitterReportEnv)
}

// benchmarkSynctestReport runs test, a synctest test that writes its
// figures (JSON, metric name → value) to the file named by env, in a child
// process (this test binary) once per iteration, and reports the figures.
// ns/op is the child's run time.
func benchmarkSynctestReport(b *testing.B, test, env string) {
	report := map[string]float64{}
	for range b.N {
		path := filepath.Join(b.TempDir(), "report.json")
		cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), env+"="+path)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", test, err, out)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := json.Unmarshal(raw, &report); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, 0, len(report))
	for k := range report {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		b.ReportMetric(report[k], k)
	}
}
