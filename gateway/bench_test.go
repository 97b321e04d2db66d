package gateway_test

// Benchmarks of the gateway, each reporting a ratio against a baseline
// measured in the same run (the paths interleaved, so all see the same GC
// and the same neighbours on the machine). b.N is the calls (or lists, or
// starts) per path, so give each its own -benchtime:
//
//	go test -run '^$' -bench 'HTTPCall|ServeStdioCall' -benchtime 2000x -count 3 ./gateway/
//	go test -run '^$' -bench 'ListTools1000' -benchtime 100x -count 3 ./gateway/
//	go test -run '^$' -bench 'IdleSessions' -benchtime 1x -count 3 ./gateway/
//	go test -run '^$' -bench 'ServeInitialize' -benchtime 20x -count 3 ./gateway/
//
// (a start of serve takes ~2 s to wind down). The same call beside
// TBXark/mcp-proxy, every path a process of its own, is
// BenchmarkPeerHTTPCall (peer_bench_test.go; scripts/bench-peer runs it).
// BENCHMARKS.md §8 gives the figures and the targets. The servers' GOGC is pinned
// (MCPVISOR_BENCH_CHILD_GOGC, default 100) so that the host's GOGC alone
// varies with the environment.
//
// Every ratio compares paths on one protocol version, every hop of them
// (a client's to the gateway and the manager's to the server alike), and
// each benchmark fails if a path negotiated another: the go-sdk falls
// back to an older version without a word, and the generations differ in
// cost.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// ---- shared helpers ----

// childGOGC is the GOGC of every server process the benchmarks start.
func childGOGC() string {
	if g := os.Getenv("MCPVISOR_BENCH_CHILD_GOGC"); g != "" {
		return g
	}
	return "100"
}

// httpProtocol is the protocol version of every hop of every path the
// HTTP benchmarks compare with the relay. A client on 2026-07-28 keeps no
// session, and there is no relay of that shape: its calls are compared
// between the gateway's two paths only (sessionlessCallPaths). The servers behind the paths are held to it too (upTo): the
// manager's client, like any go-sdk client, would otherwise take
// 2026-07-28 upstream while the relay's path ran 2025-11-25 end to end.
const httpProtocol = "2025-11-25"

// benchProtocolEnv is the latest protocol version a bench-demo server
// serves (every version if empty).
const benchProtocolEnv = "MCPVISOR_BENCH_PROTOCOL"

// upTo is a server's transport that serves protocol versions up to
// latest (every version if ""): the go-sdk server offers no later one in
// server/discover, so a client that asks for one falls back to initialize
// at latest.
type upTo struct {
	mcp.Transport
	latest string
}

func (t upTo) SupportsProtocolVersion(v string) bool { return t.latest == "" || v <= t.latest }

// benchServer is the demo server as a stdio process serving protocol
// versions up to version: this test binary re-run in mode bench-demo.
func benchServer(b *testing.B, version string) (command []string, env map[string]string) {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return []string{self}, map[string]string{serverEnv: "bench-demo", benchProtocolEnv: version, "GOGC": childGOGC()}
}

// benchServerCmd is benchServer as a command to start.
func benchServerCmd(b *testing.B, version string) *exec.Cmd {
	command, env := benchServer(b, version)
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// newManager is a manager with the no-op telemetry providers the host
// passes when no exporter is set, closed when b ends.
func newManager(b *testing.B, dial manager.DialFunc) *manager.Manager {
	b.Helper()
	m := manager.New(manager.Options{TracerProvider: tracenoop.NewTracerProvider(),
		MeterProvider: metricnoop.NewMeterProvider(), Dial: dial})
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			b.Errorf("manager.Close: %v", err)
		}
	})
	return m
}

// addAndWait declares a server and waits until it is connected.
func addAndWait(b *testing.B, m *manager.Manager, name string, spec manager.Spec) {
	b.Helper()
	if err := m.Add(name, spec); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, err := m.Wait(ctx, name, manager.StateConnected); err != nil {
		b.Fatalf("%s: %v (%+v)", name, err, st)
	}
}

// listen serves a gateway over m on 127.0.0.1:0 and returns its /mcp URL;
// both are closed when b ends.
func listen(b *testing.B, m *manager.Manager) string {
	b.Helper()
	url, _ := listenWith(b, m, "off")
	return url
}

// listenWith is listen with the gateway's fast path set to fastPath.
func listenWith(b *testing.B, m *manager.Manager, fastPath string) (string, *gateway.Gateway) {
	b.Helper()
	// Room for BenchmarkIdleSessions' sessions while the last run's are
	// still closing: it measures what a session costs, not the cap.
	gw := gateway.New(gateway.Options{Source: m, Version: "bench", MaxSessions: 4 * idleSessionsN, FastPath: fastPath})
	srv, err := gw.Listen(gateway.HTTPOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		gw.Close()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		gw.Close()
	})
	return "http://" + srv.Addr() + "/mcp", gw
}

// httpClient is an HTTP client that keeps enough idle connections for 16
// requests in flight (http.DefaultTransport keeps 2 per host, which would
// open and close connections all the time under load, on both paths).
func httpClient(b *testing.B) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	b.Cleanup(t.CloseIdleConnections)
	return &http.Client{Transport: t}
}

// connectHTTP connects a go-sdk client to a streamable HTTP endpoint on
// protocol version, failing b if it negotiated another; it is closed when
// b ends.
func connectHTTP(b *testing.B, url, version string) *mcp.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: httpClient(b)},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatalf("connect %s: %v", url, err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	requireProtocol(b, url, cs.InitializeResult().ProtocolVersion, version)
	return cs
}

// requireProtocol fails b unless what negotiated protocol version want.
func requireProtocol(b *testing.B, what, got, want string) {
	b.Helper()
	if got != want {
		b.Fatalf("%s negotiated protocol %s, not %s: the paths would not compare the same protocol", what, got, want)
	}
}

// connectStdio starts cmd and connects a go-sdk client to it on protocol
// version, failing b if it negotiated another; it is closed when b ends.
func connectStdio(b *testing.B, cmd *exec.Cmd, version string) *mcp.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatalf("%s: %v", cmd, err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	requireProtocol(b, cmd.String(), cs.InitializeResult().ProtocolVersion, version)
	return cs
}

// waitForTool lists cs's tools until name is among them.
func waitForTool(b *testing.B, cs *mcp.ClientSession, name string) {
	b.Helper()
	require.EventuallyWithT(b, func(c *assert.CollectT) {
		res, err := cs.ListTools(context.Background(), nil)
		require.NoError(c, err, "tools/list")
		assert.True(c, slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == name }), "tool %q not listed", name)
	}, 30*time.Second, 20*time.Millisecond)
}

// echo returns a function calling tool (demo's echo under some name) on cs.
func echo(cs *mcp.ClientSession, tool, path string) func() error {
	return func() error {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}})
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if res.IsError || len(res.Content) != 1 {
			return fmt.Errorf("%s: unexpected result %+v", path, res)
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); !ok || tc.Text != "x" {
			return fmt.Errorf("%s: unexpected content %+v", path, res.Content[0])
		}
		return nil
	}
}

func mustCall(b *testing.B, f func() error) {
	if err := f(); err != nil {
		b.Fatal(err)
	}
}

// serial times n calls of each of two paths, one of each per round,
// alternating which goes first, after warmup calls of each, and returns
// each path's latencies.
func serial(b *testing.B, a, base func() error, n, warmup int) (aTimes, baseTimes []time.Duration) {
	t := serialN(b, []func() error{a, base}, n, warmup)
	return t[0], t[1]
}

// serialN is serial for any number of paths: each round calls every path
// once, starting with the next path each round.
func serialN(b *testing.B, paths []func() error, n, warmup int) [][]time.Duration {
	for range warmup {
		for _, f := range paths {
			mustCall(b, f)
		}
	}
	times := make([][]time.Duration, len(paths))
	for i := range times {
		times[i] = make([]time.Duration, 0, n)
	}
	for i := range n {
		for j := range paths {
			k := (i + j) % len(paths)
			start := time.Now()
			mustCall(b, paths[k])
			times[k] = append(times[k], time.Since(start))
		}
	}
	return times
}

// reportLatency reports the percentiles of both paths and their p50 ratio;
// ns/op is the first path's mean.
func reportLatency(b *testing.B, name, baseName string, a, base []time.Duration) {
	var total time.Duration
	for _, d := range a {
		total += d
	}
	reportMetric(b, float64(total.Nanoseconds())/float64(len(a)), "ns/op")
	p50, baseP50 := testutil.Percentile(a, 50), testutil.Percentile(base, 50)
	reportMetric(b, micros(p50), name+"-p50-µs")
	reportMetric(b, micros(baseP50), baseName+"-p50-µs")
	reportMetric(b, float64(p50)/float64(baseP50), "p50-ratio")
	reportMetric(b, micros(testutil.Percentile(a, 99)), name+"-p99-µs")
	reportMetric(b, micros(testutil.Percentile(base, 99)), baseName+"-p99-µs")
}

// reportAllocs counts heap allocations and bytes per call of each path
// (this process: the clients, the gateway, the manager, the relay), in
// alternating batches of 50 calls, about n calls of each (at least 100,
// at most 2000).
func reportAllocs(b *testing.B, n int, names []string, paths ...func() error) {
	const batch = 50
	rounds := min(max(n, 100), 2000) / batch
	mallocs := make([]uint64, len(paths))
	bytes := make([]uint64, len(paths))
	var before, after runtime.MemStats
	for range rounds {
		for i, f := range paths {
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
	for i, name := range names {
		reportMetric(b, float64(mallocs[i])/calls, name+"-allocs/call")
		reportMetric(b, float64(bytes[i])/calls, name+"-B/call")
	}
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// The targets the gateway's fast paths (/mcp and /servers/NAME/mcp) are
// held to, each against the relay of the same run; the benchmarks fail
// with the measured figure when one is missed. Idle sessions are held to
// the go-sdk handler's own memory plus idleOverSDK.
const (
	maxP50Ratio   = 1.15
	minThroughput = 0.85
	maxCPUMicros  = 200.0
	idleOverSDK   = 8 << 10
)

// minTargetN is the fewest iterations a benchmark holds the targets at:
// go test first runs each benchmark once with b.N = 1, which measures
// nothing worth a verdict.
const minTargetN = 100

// fastTarget reports whether path is one the targets hold for.
func fastTarget(path string) bool {
	return path == "fast" || path == "fast-server" || path == "mcpvisor-fast" || path == "mcpvisor-fast-server"
}

// metricLogs holds, per benchmark, every metric reportMetric reported.
var metricLogs sync.Map // *testing.B → *[]string

// reportMetric is b.ReportMetric, and logs every metric of b if b fails:
// go test prints no result line for a failed benchmark, and a target
// missed should not hide the other figures.
func reportMetric(b *testing.B, v float64, unit string) {
	b.ReportMetric(v, unit)
	p, loaded := metricLogs.LoadOrStore(b, new([]string))
	all := p.(*[]string)
	if !loaded {
		b.Cleanup(func() {
			metricLogs.Delete(b)
			if b.Failed() {
				b.Logf("measured (b.N=%d): %s", b.N, strings.Join(*all, "  "))
			}
		})
	}
	*all = append(*all, strconv.FormatFloat(v, 'g', 4, 64)+" "+unit)
}

// atMost fails b, naming what and the figure, unless got ≤ limit.
func atMost(b *testing.B, what string, got, limit float64) {
	b.Helper()
	if b.N >= minTargetN && got > limit {
		b.Errorf("%s is %.3g, over the target of %.3g (by %.0f%%)", what, got, limit, 100*(got/limit-1))
	}
}

// atLeast fails b, naming what and the figure, unless got ≥ limit.
func atLeast(b *testing.B, what string, got, limit float64) {
	b.Helper()
	if b.N >= minTargetN && got < limit {
		b.Errorf("%s is %.3g, under the target of %.3g (by %.0f%%)", what, got, limit, 100*(1-got/limit))
	}
}

// ---- 1. a tool call through /mcp vs a minimal relay ----

// relay is the floor for the gateway's HTTP path: an HTTP handler that
// writes each JSON-RPC body as one line to a stdio server process and
// answers with the line that carries the same id. Nothing else: no
// sessions, no parsing beyond the id, one process shared by every request
// (matched by id, so requests in flight overlap as on the gateway).
type relay struct {
	stdin io.WriteCloser
	wmu   sync.Mutex // serializes writes to stdin

	mu      sync.Mutex
	pending map[string]chan []byte // by the request's raw JSON id
}

// startRelay runs a demo server serving up to protocol version under a
// relay served on 127.0.0.1:0 and returns the relay's URL.
func startRelay(b *testing.B, version string) string {
	b.Helper()
	cmd := benchServerCmd(b, version)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &relay{stdin: stdin, pending: map[string]chan []byte{}}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r.read(stdout)
	}()
	srv := httptest.NewServer(r)
	b.Cleanup(func() {
		srv.Close()
		_ = stdin.Close() // the demo server exits at EOF
		<-readDone
		_ = cmd.Wait()
	})
	return srv.URL + "/mcp"
}

func (r *relay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var head struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	line := append(bytes.TrimSpace(body), '\n')
	if head.ID == nil { // a notification
		r.write(line)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	ch := make(chan []byte, 1)
	id := string(head.ID)
	r.mu.Lock()
	r.pending[id] = ch
	r.mu.Unlock()
	r.write(line)
	select {
	case reply := <-ch:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(reply)
	case <-req.Context().Done():
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
	}
}

func (r *relay) write(line []byte) {
	r.wmu.Lock()
	_, _ = r.stdin.Write(line)
	r.wmu.Unlock()
}

// read hands each reply from the server to the request waiting for its id;
// the server's own requests and notifications are dropped.
func (r *relay) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return
		}
		var head struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &head) != nil || head.ID == nil || head.Method != "" {
			continue
		}
		r.mu.Lock()
		ch := r.pending[string(head.ID)]
		delete(r.pending, string(head.ID))
		r.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

// startSDKProxy serves, with the go-sdk alone, what the gateway does for
// one tool: an mcp.Server behind the SDK's streamable handler whose echo
// forwards the call over a plain go-sdk stdio session to a demo server.
// It is not a floor but a reference: the gateway without mcpvisor's code
// (manager, routing, naming), to tell the SDK's share of the gap from
// mcpvisor's.
func startSDKProxy(b *testing.B, version string) string {
	b.Helper()
	up := connectStdio(b, benchServerCmd(b, version), version)
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdkproxy", Version: "v0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// httpPath names the paths of httpCallPaths, in its order.
var httpPath = []string{"relay", "gateway", "fast", "fast-server", "sdkproxy"}

// httpCallPaths is demo's echo called by go-sdk streamable HTTP clients,
// in httpPath's order: through the relay (→ a stdio demo server of the
// same binary); through the gateway's /mcp (→ manager → a stdio demo
// server) on the go-sdk path; through /mcp and /servers/demo/mcp of a
// second gateway over the same manager with the fast path on; and
// through the go-sdk proxy of startSDKProxy, every hop on protocol
// version.
func httpCallPaths(b *testing.B, version string) []func() error {
	b.Helper()
	m := newManager(b, nil)
	command, env := benchServer(b, version)
	addAndWait(b, m, "demo", manager.Spec{Transport: manager.TransportStdio, Command: command, Env: env})
	requireUpstream(b, m, "demo", version)
	gcs := connectHTTP(b, listen(b, m), version)
	waitForTool(b, gcs, "demo__echo")
	fast, fgw := listenWith(b, m, "on")
	fcs := connectHTTP(b, fast, version)
	waitForTool(b, fcs, "demo__echo")
	scs := connectHTTP(b, strings.TrimSuffix(fast, "/mcp")+"/servers/demo/mcp", version)
	waitForTool(b, scs, "echo")
	rcs := connectHTTP(b, startRelay(b, version), version)
	if _, err := rcs.ListTools(context.Background(), nil); err != nil {
		b.Fatalf("relay: tools/list: %v", err)
	}
	pcs := connectHTTP(b, startSDKProxy(b, version), version)
	mustCall(b, echo(fcs, "demo__echo", "fast"))
	mustCall(b, echo(scs, "echo", "fast-server"))
	if n := gateway.FastServed(fgw); n != 2 {
		b.Fatalf("the fast path answered %d of 2 calls", n)
	}
	return []func() error{echo(rcs, "echo", "relay"), echo(gcs, "demo__echo", "gateway"),
		echo(fcs, "demo__echo", "fast"), echo(scs, "echo", "fast-server"), echo(pcs, "echo", "sdkproxy")}
}

// requireUpstream fails b unless the manager's session of server
// negotiated protocol version.
func requireUpstream(b *testing.B, m *manager.Manager, server, version string) {
	b.Helper()
	st, err := m.Status(server)
	if err != nil {
		b.Fatal(err)
	}
	requireProtocol(b, "the manager's session of "+server, st.Protocol, version)
}

// BenchmarkHTTPCall compares a tool call through the gateway with the
// same call through a minimal relay (the floor: the HTTP hop and a stdio
// process, nothing else) and through the go-sdk proxy, one call of each
// path (httpPath) per iteration. Reported for each path but the relay:
// its p50 (µs) and p50-ratio (path/relay; target ≤ 1.15 for the fast
// paths, asserted; the go-sdk path, fast path off, is not held to it);
// the relay's p50; the p99 of the relay and the
// gateway's go-sdk path; allocations and bytes per call of each path.
// ns/op is the gateway's go-sdk path's mean. A second sub-benchmark has
// clients on 2026-07-28 (no session) and reports each fast path's p50 per
// the go-sdk path's (see sessionlessCallPaths).
func BenchmarkHTTPCall(b *testing.B) {
	b.Run("proto="+httpProtocol, func(b *testing.B) {
		paths := httpCallPaths(b, httpProtocol)
		b.ResetTimer()
		t := serialN(b, paths, b.N, 100)
		b.StopTimer()
		reportLatency(b, "gateway", "relay", t[1], t[0])
		relay := testutil.Percentile(t[0], 50)
		for i, name := range httpPath[2:] {
			p50 := testutil.Percentile(t[i+2], 50)
			reportMetric(b, micros(p50), name+"-p50-µs")
			reportMetric(b, float64(p50)/float64(relay), name+"-p50-ratio")
			if fastTarget(name) {
				atMost(b, name+"'s p50 ÷ the relay's", float64(p50)/float64(relay), maxP50Ratio)
			}
		}
		reportAllocs(b, b.N, httpPath, paths...)
	})
	b.Run("proto=2026-07-28,upstream="+httpProtocol, func(b *testing.B) {
		paths := sessionlessCallPaths(b)
		b.ResetTimer()
		t := serialN(b, paths, b.N, 100)
		b.StopTimer()
		sdk := testutil.Percentile(t[0], 50)
		reportMetric(b, micros(sdk), "gateway-p50-µs")
		for i, name := range sessionlessPath[1:] {
			p50 := testutil.Percentile(t[i+1], 50)
			reportMetric(b, micros(p50), name+"-p50-µs")
			reportMetric(b, float64(p50)/float64(sdk), name+"-p50-per-gateway")
		}
		reportAllocs(b, b.N, sessionlessPath, paths...)
	})
}

// sessionlessPath names the paths of sessionlessCallPaths.
var sessionlessPath = []string{"gateway", "fast", "fast-server"}

// sessionlessCallPaths is demo's echo called by go-sdk streamable HTTP
// clients on 2026-07-28, which keep no session, in sessionlessPath's
// order: through the gateway's /mcp on the go-sdk path, and through /mcp
// and /servers/demo/mcp of a second gateway over the same manager with the
// fast path on. The manager's session with the server is on httpProtocol,
// the raw path's: there is no relay or go-sdk proxy of this shape to hold
// them to, so the fast path is compared with the go-sdk path only.
func sessionlessCallPaths(b *testing.B) []func() error {
	b.Helper()
	const version = "2026-07-28"
	m := newManager(b, nil)
	command, env := benchServer(b, httpProtocol)
	addAndWait(b, m, "demo", manager.Spec{Transport: manager.TransportStdio, Command: command, Env: env})
	requireUpstream(b, m, "demo", httpProtocol)
	gcs := connectHTTP(b, listen(b, m), version)
	waitForTool(b, gcs, "demo__echo")
	fast, fgw := listenWith(b, m, "on")
	fcs := connectHTTP(b, fast, version)
	waitForTool(b, fcs, "demo__echo")
	scs := connectHTTP(b, strings.TrimSuffix(fast, "/mcp")+"/servers/demo/mcp", version)
	waitForTool(b, scs, "echo")
	mustCall(b, echo(fcs, "demo__echo", "fast"))
	mustCall(b, echo(scs, "echo", "fast-server"))
	if n := gateway.FastServed(fgw); n != 2 {
		b.Fatalf("the fast path answered %d of 2 calls", n)
	}
	return []func() error{echo(gcs, "demo__echo", "gateway"), echo(fcs, "demo__echo", "fast"), echo(scs, "echo", "fast-server")}
}

// BenchmarkHTTPCallParallel compares throughput with 16 calls in flight on
// one client session, through each path of httpPath, taking turns in
// rounds. Reported for each path: its calls/s, its throughput-ratio
// (path/relay; target ≥ 0.85 for the fast paths, asserted) and the CPU
// time of this process per call (host-cpu-µs/call: client, gateway and
// manager, or client and relay, or client and proxy; the gateway's own
// share is BenchmarkPeerHTTPCall's, where it is a process of its own). ns/op is the gateway's
// go-sdk path's wall time per call.
func BenchmarkHTTPCallParallel(b *testing.B) {
	b.Run("proto="+httpProtocol, func(b *testing.B) {
		const callers = 16
		paths := httpCallPaths(b, httpProtocol)
		for range 100 {
			for _, f := range paths {
				mustCall(b, f)
			}
		}
		rounds := min(max(b.N/500, 1), 10)
		n := len(paths)
		elapsed, cpu, calls := make([]time.Duration, n), make([]time.Duration, n), make([]int, n)
		b.ResetTimer()
		for r := range rounds {
			each := max(b.N/rounds, callers)
			for j := range paths {
				i := (r + j) % n
				cpu0 := testutil.SelfCPU()
				elapsed[i] += testutil.Hammer(b, paths[i], each, callers)
				cpu[i] += testutil.SelfCPU() - cpu0
				calls[i] += each
			}
		}
		b.StopTimer()
		rate := make([]float64, n)
		for i := range rate {
			rate[i] = float64(calls[i]) / elapsed[i].Seconds()
		}
		reportMetric(b, float64(elapsed[1].Nanoseconds())/float64(calls[1]), "ns/op")
		for i, name := range httpPath {
			reportMetric(b, rate[i], name+"-calls/s")
			if i > 0 {
				reportMetric(b, rate[i]/rate[0], name+"-throughput-ratio")
			}
			if fastTarget(name) {
				atLeast(b, name+"'s calls/s with 16 in flight ÷ the relay's", rate[i]/rate[0], minThroughput)
			}
			reportMetric(b, micros(cpu[i])/float64(calls[i]), name+"-host-cpu-µs/call")
		}
	})
}

// ---- 2. a tool call through `mcpvisor serve` (stdio) vs direct ----

// stdioProtocol is the protocol version of the stdio benchmark's paths.
const stdioProtocol = "2026-07-28"

// writeStartup writes a startup.lua into a temporary directory.
func writeStartup(b *testing.B, src string) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "startup.lua")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// serveCmd is `mcpvisor serve` of a startup file, its log on stderr kept
// in buf (warnings only).
func serveCmd(bin, startup string, stderr io.Writer) *exec.Cmd {
	cmd := exec.Command(bin, "serve", "-c", startup, "--no-watch", "--log-level", "warn")
	cmd.Stderr = stderr
	return cmd
}

// BenchmarkServeStdioCall compares a tool call through `mcpvisor serve`
// over stdio (a go-sdk client on mcp.CommandTransport → the gateway →
// the manager → a stdio demo server) with a direct stdio session to the
// same server binary, every hop of every path on one protocol version:
//
//   - proto=2026-07-28 (the go-sdk's latest; serve's session of the server
//     is held to it with protocol =, so the calls take the go-sdk path:
//     the raw path calls only servers on an older protocol):
//     serve against direct. Reported: serve-p50-µs, direct-p50-µs,
//     p50-ratio and the p99s; ns/op is the serve path's mean.
//   - proto=2025-11-25: serve with the fast path off (sdk), serve with
//     --fast-path on (fast), direct, and the same server behind a
//     process that only copies bytes both ways (relay, the floor of any
//     second process on the way: runStdioRelayProcess), interleaved.
//     Reported: each path's p50 and p99, sdk-, fast- and relay-p50-ratio
//     against direct (fast's target ≤ 1.6), and fast-relay-p50-ratio
//     (fast against the relay); the CPU per call of serve's process
//     (fast-, sdk-cpu-µs/call) and of the relay's, their servers' not
//     counted (Linux; 10 ms ticks: run ≥ 2000 calls); ns/op is the fast
//     path's mean.
func BenchmarkServeStdioCall(b *testing.B) {
	bin := testutil.BuildMcpvisor(b)
	b.Run("proto="+stdioProtocol, func(b *testing.B) {
		// The manager asks a stdio server for 2025-11-25 unless told.
		startup := writeStartup(b, fmt.Sprintf("mcp_add(\"demo\", {command = {MCPVISOR, \"demo-server\"}, protocol = %q, env = {GOGC = %q}})\n", stdioProtocol, childGOGC()))
		var stderr testutil.SyncBuffer
		serve, _ := startServe(b, bin, startup, stdioProtocol, &stderr)
		if strings.Contains(stderr.String(), "does not speak the protocol asked for") {
			b.Fatalf("serve's session of demo is not on %s:\n%s", stdioProtocol, stderr.String())
		}
		direct := exec.Command(bin, "demo-server")
		direct.Env = append(os.Environ(), "GOGC="+childGOGC())
		dcs := connectStdio(b, direct, stdioProtocol)
		if _, err := dcs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		sTimes, dTimes := serial(b, echo(serve, "demo__echo", "serve"), echo(dcs, "echo", "direct"), b.N, 100)
		b.StopTimer()
		reportLatency(b, "serve", "direct", sTimes, dTimes)
	})
	b.Run("proto="+httpProtocol, func(b *testing.B) {
		// The bench-demo server (this binary) held to httpProtocol, behind
		// serve as directly: a go-sdk client would take 2026-07-28 of it.
		command, env := benchServer(b, httpProtocol)
		dir := b.TempDir()
		var sdk, fast *mcp.ClientSession
		var pids [4]int // of the processes a path's client talks to, as t's paths
		var lua strings.Builder
		for _, path := range []string{"sdk", "fast"} {
			env[benchProtocolFileEnv] = filepath.Join(dir, path+".protocol")
			fmt.Fprintf(&lua, "mcp_add(%q, {command = {%q}, env = {", "demo", command[0])
			for _, k := range slices.Sorted(maps.Keys(env)) {
				fmt.Fprintf(&lua, "[%q] = %q, ", k, env[k])
			}
			lua.WriteString("}})\n")
			b.Setenv(gateway.FastPathEnv, map[string]string{"sdk": "off", "fast": "on"}[path])
			startup := writeStartup(b, lua.String())
			lua.Reset()
			if path == "sdk" {
				sdk, pids[1] = startServe(b, bin, startup, httpProtocol, nil)
			} else {
				fast, pids[0] = startServe(b, bin, startup, httpProtocol, nil)
			}
			got, err := os.ReadFile(env[benchProtocolFileEnv])
			if err != nil {
				b.Fatal(err)
			}
			requireProtocol(b, "serve's session of demo ("+path+")", string(got), httpProtocol)
		}
		dcs := connectStdio(b, benchServerCmd(b, httpProtocol), httpProtocol)
		relay := stdioRelayCmd(b, httpProtocol)
		rcs := connectStdio(b, relay, httpProtocol)
		pids[3] = relay.Process.Pid
		for _, cs := range []*mcp.ClientSession{dcs, rcs} {
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		var cpu0 [4]time.Duration
		for i, pid := range pids {
			cpu0[i], _ = procCPU(pid)
		}
		t := serialN(b, []func() error{echo(fast, "demo__echo", "fast"), echo(sdk, "demo__echo", "sdk"), echo(dcs, "echo", "direct"), echo(rcs, "echo", "relay")}, b.N, 100)
		b.StopTimer()
		for i, name := range []string{"fast", "sdk", "", "relay"} {
			// The CPU of serve's process (or the relay's) per call, its
			// server's not included; warm-up calls included.
			if cpu1, ok := procCPU(pids[i]); ok && name != "" {
				b.ReportMetric(micros(cpu1-cpu0[i])/float64(b.N+100), name+"-cpu-µs/call")
			}
		}
		var total time.Duration
		for _, d := range t[0] {
			total += d
		}
		b.ReportMetric(float64(total.Nanoseconds())/float64(len(t[0])), "ns/op")
		base := testutil.Percentile(t[2], 50)
		for i, name := range []string{"fast", "sdk", "direct", "relay"} {
			p50 := testutil.Percentile(t[i], 50)
			b.ReportMetric(micros(p50), name+"-p50-µs")
			b.ReportMetric(micros(testutil.Percentile(t[i], 99)), name+"-p99-µs")
			if name != "direct" {
				b.ReportMetric(float64(p50)/float64(base), name+"-p50-ratio")
			}
		}
		b.ReportMetric(float64(testutil.Percentile(t[0], 50))/float64(testutil.Percentile(t[3], 50)), "fast-relay-p50-ratio")
	})
}

// startServe starts `mcpvisor serve` of startup (the fast path as
// FastPathEnv says), connects a go-sdk client on protocol version and
// waits until it lists demo__echo; it returns the session and serve's
// process id. serve's log (warnings) goes to stderr, if not nil, and is
// shown if b fails.
func startServe(b *testing.B, bin, startup, version string, stderr *testutil.SyncBuffer) (_ *mcp.ClientSession, pid int) {
	b.Helper()
	if stderr == nil {
		stderr = &testutil.SyncBuffer{}
	}
	b.Cleanup(func() {
		if b.Failed() {
			b.Logf("mcpvisor serve stderr:\n%s", stderr.String())
		}
	})
	cmd := serveCmd(bin, startup, stderr)
	cs := connectStdio(b, cmd, version)
	waitForTool(b, cs, "demo__echo")
	return cs, cmd.Process.Pid
}

// BenchmarkStdioGatewayInProcess is the serve-over-stdio path with the
// gateway and the manager in this process, for a CPU profile of what they
// do per call (the server is a process of its own):
//
//	go test -run '^$' -bench StdioGatewayInProcess -benchtime 3000x -cpuprofile cpu.out ./gateway/
//
// The client is a go-sdk client on pipes; every hop on httpProtocol.
// Sub-benchmarks fast=on and fast=off; ns/op is a call's mean.
func BenchmarkStdioGatewayInProcess(b *testing.B) {
	for _, fast := range []string{"on", "off"} {
		b.Run("fast="+fast, func(b *testing.B) {
			m := newManager(b, nil)
			command, env := benchServer(b, httpProtocol)
			addAndWait(b, m, "demo", manager.Spec{Transport: manager.TransportStdio, Command: command, Env: env})
			requireUpstream(b, m, "demo", httpProtocol)
			gw := gateway.New(gateway.Options{Source: m, Version: "bench", FastPath: fast})
			b.Cleanup(gw.Close)
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- gw.ServeStdio(context.Background(), inR, outW, "", "") }()
			b.Cleanup(func() { _ = inW.Close(); <-done; _ = outR.Close() })
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
			cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: httpProtocol})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cs.Close() })
			waitForTool(b, cs, "demo__echo")
			f := echo(cs, "demo__echo", "fast="+fast)
			for range 100 {
				mustCall(b, f)
			}
			served := gateway.FastServed(gw)
			b.ResetTimer()
			for range b.N {
				mustCall(b, f)
			}
			b.StopTimer()
			if got := gateway.FastServed(gw) - served; (fast == "on") != (got == int64(b.N)) {
				b.Fatalf("fast=%s: the fast path answered %d of %d calls", fast, got, b.N)
			}
		})
	}
}

// ---- 3. idle sessions and a list of 1000 tools ----

// inMemoryDial connects every attempt to a fresh session of newServer()
// over in-memory transports, serving protocol versions up to version.
func inMemoryDial(newServer func() *mcp.Server, version string) manager.DialFunc {
	return func(ctx context.Context, _ string, _ manager.Spec) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := newServer().Connect(ctx, upTo{st, version}, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// fakeSpec is a stdio declaration whose command an Options.Dial ignores.
var fakeSpec = manager.Spec{Transport: manager.TransportStdio, Command: []string{"in-memory"}}

const (
	idleHelperEnv  = "MCPVISOR_BENCH_IDLE_URL"
	idleSessionsN  = 1000
	idleReadyMark  = "idle-sessions-ready"
	idleVersionEnv = "MCPVISOR_BENCH_IDLE_PROTOCOL"
)

// BenchmarkIdleSessions measures what 1000 idle client sessions on /mcp
// cost the gateway's process: HeapInuse (after two collections) and
// goroutines, each minus a baseline taken just before. The clients live
// in a helper process (this test binary re-run as
// TestIdleSessionsHelper), so only the serving side is counted. The same
// is measured for the demo server behind the go-sdk's own streamable
// handler, the floor any go-sdk server pays per session. Sessions are on
// httpProtocol (initialize, a session id, the standalone SSE GET held
// open); the helper fails if one negotiated another version. Reported:
// gateway-B/session, sdk-B/session, the ratio, over-sdk-B/session (the
// gateway's excess; target ≤ 8 KiB, asserted), and goroutines per
// session of each.
func BenchmarkIdleSessions(b *testing.B) {
	m := newManager(b, inMemoryDial(demo.NewServer, httpProtocol))
	addAndWait(b, m, "demo", fakeSpec)
	requireUpstream(b, m, "demo", httpProtocol)
	gwURL := listen(b, m)
	sdkServer := demo.NewServer() // one server, a session per client, as the gateway's endpoint
	sdk := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer }, nil))
	b.Cleanup(sdk.Close)

	b.Run("proto="+httpProtocol, func(b *testing.B) {
		var gwHeap, gwGoroutines, sdkHeap, sdkGoroutines float64
		for range b.N {
			h, g := idleCost(b, gwURL, httpProtocol)
			gwHeap, gwGoroutines = gwHeap+h, gwGoroutines+g
			h, g = idleCost(b, sdk.URL, httpProtocol)
			sdkHeap, sdkGoroutines = sdkHeap+h, sdkGoroutines+g
		}
		n := float64(b.N)
		reportMetric(b, gwHeap/n, "gateway-B/session")
		reportMetric(b, sdkHeap/n, "sdk-B/session")
		reportMetric(b, gwHeap/sdkHeap, "heap-ratio")
		reportMetric(b, (gwHeap-sdkHeap)/n, "over-sdk-B/session")
		// b.N counts runs of idleSessionsN sessions here: every run holds.
		if over := (gwHeap - sdkHeap) / n; over > idleOverSDK {
			b.Errorf("the gateway's heap per idle session is %.0f bytes over the go-sdk handler's, over the target of %d (by %.0f%%)",
				over, idleOverSDK, 100*(over/idleOverSDK-1))
		}
		reportMetric(b, gwGoroutines/n, "gateway-goroutines/session")
		reportMetric(b, sdkGoroutines/n, "sdk-goroutines/session")
	})
}

// idleCost runs the helper against url with idleSessionsN sessions and
// returns this process's growth per session while it holds them.
func idleCost(b *testing.B, url, version string) (heapPerSession, goroutinesPerSession float64) {
	b.Helper()
	heap0, g0 := settledHeap(), settledGoroutines()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestIdleSessionsHelper$", "-test.v")
	cmd.Env = append(os.Environ(), idleHelperEnv+"="+url, idleVersionEnv+"="+version)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = stdin.Close() // the helper closes its sessions and exits
		if err := cmd.Wait(); err != nil {
			b.Errorf("helper: %v\n%s", err, stderr.String())
		}
	}()
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	ready := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if sc.Text() == idleReadyMark {
			ready = true
			break
		}
	}
	if !ready {
		b.Fatalf("helper did not get ready:\n%s%s", out.String(), stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	heap1, g1 := settledHeap(), settledGoroutines()
	return float64(int64(heap1)-int64(heap0)) / idleSessionsN, float64(g1-g0) / idleSessionsN
}

// settledHeap is HeapInuse after two collections.
func settledHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// settledGoroutines is the goroutine count once it has held still for
// 100 ms (at most 5 s).
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m == n {
			return n
		}
		n = m
	}
	return n
}

// TestIdleSessionsHelper is BenchmarkIdleSessions's client side, run in a
// process of its own; it skips unless the benchmark starts it. It connects
// idleSessionsN sessions, says so on stdout, and holds them until stdin
// ends.
func TestIdleSessionsHelper(t *testing.T) {
	url := os.Getenv(idleHelperEnv)
	if url == "" {
		t.Skip("run by BenchmarkIdleSessions")
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	client := mcp.NewClient(&mcp.Implementation{Name: "idle", Version: "v0"}, nil)
	sessions := make([]*mcp.ClientSession, idleSessionsN)
	var wg sync.WaitGroup
	errs := make(chan error, idleSessionsN)
	sem := make(chan struct{}, 32)
	for i := range sessions {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			want := os.Getenv(idleVersionEnv)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
				&mcp.ClientSessionOptions{ProtocolVersion: want})
			if err != nil {
				errs <- err
				return
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				_ = cs.Close()
				errs <- fmt.Errorf("%s negotiated protocol %s, not %s", url, got, want)
				return
			}
			sessions[i] = cs
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the standalone SSE GETs are opened after initialize
	fmt.Println(idleReadyMark)
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, cs := range sessions {
		_ = cs.Close()
	}
}

// manyTools is a server of n tools, each with a small object schema of
// two described properties, as a typical tool has.
func manyTools(n int) func() *mcp.Server {
	return func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "v0"}, nil)
		h := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		}
		for i := range n {
			s.AddTool(&mcp.Tool{
				Name:        "tool_" + strconv.Itoa(i),
				Description: "Tool number " + strconv.Itoa(i) + " of the benchmark: reads the file at path and returns at most limit lines of it.",
				InputSchema: map[string]any{
					"type": "object",
					"properties": map[string]any{
						"path":  map[string]any{"type": "string", "description": "the file to read"},
						"limit": map[string]any{"type": "integer", "description": "the most lines to return"},
					},
					"required": []any{"path"},
				},
			}, h)
		}
		return s
	}
}

// BenchmarkListTools1000 lists 1000 tools through the gateway's /mcp (a
// server of 1000 tools connected to the manager in memory) and directly
// from the same server behind the go-sdk's streamable handler, both by a
// go-sdk client over loopback HTTP, one list of each per iteration.
// Every hop is on httpProtocol. Reported: gateway-p50-µs (target ≤ 10
// ms), direct-p50-µs and p50-ratio; also the same lists as plain HTTP
// requests on the same sessions, whose answer is read but not decoded
// (gateway-raw-p50-µs, direct-raw-p50-µs, raw-p50-ratio): the servers'
// share.
func BenchmarkListTools1000(b *testing.B) {
	const n = 1000
	newServer := manyTools(n)
	m := newManager(b, inMemoryDial(newServer, httpProtocol))
	addAndWait(b, m, "many", fakeSpec)
	requireUpstream(b, m, "many", httpProtocol)
	directServer := newServer()
	direct := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return directServer }, nil))
	b.Cleanup(direct.Close)
	b.Run("proto="+httpProtocol, func(b *testing.B) {
		gwURL := listen(b, m)
		gcs := connectHTTP(b, gwURL, httpProtocol)
		dcs := connectHTTP(b, direct.URL, httpProtocol)
		list := func(cs *mcp.ClientSession, path string) func() error {
			return func() error {
				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if len(res.Tools) != n || res.NextCursor != "" {
					return fmt.Errorf("%s: %d tools listed, next cursor %q", path, len(res.Tools), res.NextCursor)
				}
				return nil
			}
		}
		waitForTool(b, gcs, "many__tool_999")
		hc := httpClient(b)
		paths := []func() error{list(gcs, "gateway"), list(dcs, "direct"),
			rawList(hc, gwURL, gcs, "many__tool_999"), rawList(hc, direct.URL, dcs, "tool_999")}
		b.ResetTimer()
		t := serialN(b, paths, b.N, 5)
		b.StopTimer()
		reportLatency(b, "gateway", "direct", t[0], t[1])
		reportMetric(b, micros(testutil.Percentile(t[2], 50)), "gateway-raw-p50-µs")
		reportMetric(b, micros(testutil.Percentile(t[3], 50)), "direct-raw-p50-µs")
		reportMetric(b, float64(testutil.Percentile(t[2], 50))/float64(testutil.Percentile(t[3], 50)), "raw-p50-ratio")
	})
}

// rawList lists tools on cs's session with a plain HTTP request and reads
// the whole answer without decoding it: the server's share of a list (and
// the HTTP hop), without the go-sdk client's decoding and checking of 1000
// tools.
func rawList(hc *http.Client, url string, cs *mcp.ClientSession, last string) func() error {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	return func() error {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", cs.ID())
		req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Contains(got, []byte(`"`+last+`"`)) {
			return fmt.Errorf("raw tools/list on %s: %s: %.200s", url, resp.Status, got)
		}
		return nil
	}
}

// ---- 4. initialize while 20 servers are still connecting ----

// BenchmarkServeInitialize starts `mcpvisor serve` with the demo server
// and 20 servers that sleep 60 s before speaking, and times from starting
// the process to the answer to initialize (the go-sdk client's Connect),
// against the same for `mcpvisor demo-server` started directly; one of
// each per iteration. Reported: serve-p50-ms (target ≤ 100 ms),
// direct-p50-ms and p50-ratio.
func BenchmarkServeInitialize(b *testing.B) {
	bin := testutil.BuildMcpvisor(b)
	var src strings.Builder
	fmt.Fprintf(&src, "mcp_add(\"demo\", {command = {MCPVISOR, \"demo-server\"}, env = {GOGC = %q}})\n", childGOGC())
	for i := range 20 {
		fmt.Fprintf(&src, "mcp_add(\"slow%d\", {command = {\"sh\", \"-c\", \"sleep 60; exec \\\"$0\\\" demo-server\", MCPVISOR}})\n", i)
	}
	startup := writeStartup(b, src.String())
	connect := func(cmd *exec.Cmd) (time.Duration, *mcp.ClientSession) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
		start := time.Now()
		cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s: %v", cmd, err)
		}
		return d, cs
	}
	var serveTimes, directTimes []time.Duration
	var stderr bytes.Buffer
	once := func(serveFirst bool) {
		var sd, dd time.Duration
		var scs, dcs *mcp.ClientSession
		runServe := func() { sd, scs = connect(serveCmd(bin, startup, &stderr)) }
		runDirect := func() {
			cmd := exec.Command(bin, "demo-server")
			cmd.Env = append(os.Environ(), "GOGC="+childGOGC())
			dd, dcs = connect(cmd)
		}
		if serveFirst {
			runServe()
			runDirect()
		} else {
			runDirect()
			runServe()
		}
		// The 20 slow servers must still be connecting: only demo's
		// tools may be listed, and they may not be yet.
		res, err := scs.ListTools(context.Background(), nil)
		if err != nil {
			b.Fatalf("serve: tools/list: %v", err)
		}
		for _, t := range res.Tools {
			if !strings.HasPrefix(t.Name, "demo__") {
				b.Fatalf("serve lists %s: a slow server has connected", t.Name)
			}
		}
		_ = dcs.Close()
		_ = scs.Close() // serve exits when stdin ends, stopping the 21 servers
		serveTimes = append(serveTimes, sd)
		directTimes = append(directTimes, dd)
	}
	once(false) // warm the page cache for the binary
	serveTimes, directTimes = nil, nil
	b.ResetTimer()
	for i := range b.N {
		once(i%2 == 0)
	}
	b.StopTimer()
	if b.Failed() {
		b.Logf("mcpvisor serve stderr:\n%s", stderr.String())
	}
	ms := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
	p50, dp50 := testutil.Percentile(serveTimes, 50), testutil.Percentile(directTimes, 50)
	reportMetric(b, ms(p50), "serve-p50-ms")
	reportMetric(b, ms(testutil.Percentile(serveTimes, 100)), "serve-max-ms")
	reportMetric(b, ms(dp50), "direct-p50-ms")
	reportMetric(b, float64(p50)/float64(dp50), "p50-ratio")
}

// ---- a tool call to a streamable HTTP server ----

// BenchmarkHTTPUpstreamCall compares a tool call to a streamable HTTP
// server (the demo server behind the go-sdk's handler, on loopback)
// made directly by a go-sdk client (direct), through the gateway's
// /servers/demo/mcp with the fast path on (fast: the manager POSTs the
// call's bytes on its own session) and off (sdk: the go-sdk path), one
// call of each per round, every hop on httpProtocol. Reported: each
// path's p50, and fast-p50-ratio and sdk-p50-ratio against direct; ns/op
// is the fast path's mean. No target is held: the floor here is a go-sdk
// session, not a minimal relay.
func BenchmarkHTTPUpstreamCall(b *testing.B) {
	srv := demo.NewServer()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	b.Cleanup(hs.Close)
	m := newManager(b, nil)
	addAndWait(b, m, "demo", manager.Spec{Transport: manager.TransportHTTP, URL: hs.URL})
	requireUpstream(b, m, "demo", httpProtocol)
	fast, fgw := listenWith(b, m, "on")
	sdk := listen(b, m)
	fcs := connectHTTP(b, strings.TrimSuffix(fast, "/mcp")+"/servers/demo/mcp", httpProtocol)
	scs := connectHTTP(b, strings.TrimSuffix(sdk, "/mcp")+"/servers/demo/mcp", httpProtocol)
	dcs := connectHTTP(b, hs.URL, httpProtocol)
	waitForTool(b, fcs, "echo")
	waitForTool(b, scs, "echo")
	mustCall(b, echo(fcs, "echo", "fast"))
	if n := gateway.FastServed(fgw); n != 1 {
		b.Fatalf("the fast path answered %d of 1 calls", n)
	}
	names := []string{"direct", "fast", "sdk"}
	paths := []func() error{echo(dcs, "echo", "direct"), echo(fcs, "echo", "fast"), echo(scs, "echo", "sdk")}
	b.ResetTimer()
	t := serialN(b, paths, b.N, 100)
	b.StopTimer()
	var total time.Duration
	for _, d := range t[1] {
		total += d
	}
	reportMetric(b, float64(total.Nanoseconds())/float64(len(t[1])), "ns/op")
	direct := testutil.Percentile(t[0], 50)
	for i, name := range names {
		p50 := testutil.Percentile(t[i], 50)
		reportMetric(b, micros(p50), name+"-p50-µs")
		if i > 0 {
			reportMetric(b, float64(p50)/float64(direct), name+"-p50-ratio")
		}
	}
	reportAllocs(b, b.N, names, paths...)
}
