package gateway_test

// The gateway beside a peer: TBXark/mcp-proxy (mark3labs/mcp-go), the
// fastest other MCP proxy measured, run as a process of its own in front
// of the same stdio demo server, beside `mcpvisor serve --http` run the
// same way. Both are separate processes, so the CPU each spends per call
// is read from the kernel's account of that process alone, like for like.
// The peer needs a binary built outside the module:
//
//	scripts/bench-peer /path/to/mcp-proxy
//
// which runs BenchmarkPeerHTTPCall with MCPVISOR_PEER_BIN set; without
// it the benchmark measures mcpvisor and the relay alone (the CPU target
// is asserted only here, where the gateway is a process of its own).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
)

// peerBinEnv names the mcp-proxy binary BenchmarkPeerHTTPCall measures.
const peerBinEnv = "MCPVISOR_PEER_BIN"

// benchProtocolFileEnv names a file a bench-demo server writes the
// protocol version it agreed in initialize to: the hop behind a proxy
// that a client cannot see.
const benchProtocolFileEnv = "MCPVISOR_BENCH_PROTOCOL_FILE"

// recordProtocol writes the protocol version of each initialize the
// server answers to file.
func recordProtocol(file string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if ir, ok := res.(*mcp.InitializeResult); ok && err == nil && method == "initialize" {
				_ = os.WriteFile(file, []byte(ir.ProtocolVersion), 0o644)
			}
			return res, err
		}
	}
}

// peerPath names the paths of BenchmarkPeerHTTPCall, in its order, each
// served by a process of its own in front of its own demo server: the
// minimal relay, mcpvisor serve --http with the fast path on (its /mcp
// and /servers/demo/mcp), the same with it off (/mcp), and mcp-proxy
// (/demo/mcp).
var peerPath = []string{"relay", "mcpvisor-fast", "mcpvisor-fast-server", "mcpvisor", "mcp-proxy"}

// peerRig is what BenchmarkPeerHTTPCall measures: the paths (peerPath,
// without mcp-proxy when there is no binary), a call per path, and the
// process serving each path.
type peerRig struct {
	names []string
	calls []func() error
	pids  []int
}

// BenchmarkPeerHTTPCall calls demo's echo through each path of peerPath
// with go-sdk streamable HTTP clients, every hop on httpProtocol
// (asserted, the servers' side too): first b.N calls of each path one at
// a time, one of each per round; then b.N calls of each with 16 in
// flight on one session, taking turns in rounds. Reported for each path:
// its p50 (µs) and p50-ratio (÷ the relay), its calls/s @16 and
// throughput-ratio (÷ the relay) and the CPU per call at 16 in flight of
// the process serving it (proc-cpu-µs/call, user+system from /proc, Linux
// only; not reported where /proc cannot be read). The fast paths are held
// to the targets (p50-ratio ≤ 1.15, throughput-ratio ≥ 0.85, CPU per call
// ≤ 200 µs; the benchmark fails with the figure that missed). ns/op is
// mcpvisor-fast's mean serial latency. Without an mcp-proxy binary
// (peerBinEnv) it measures the other paths alone.
func BenchmarkPeerHTTPCall(b *testing.B) {
	peer := os.Getenv(peerBinEnv)
	b.Run("proto="+httpProtocol, func(b *testing.B) {
		rig := peerPaths(b, peer)
		b.ResetTimer()
		t := serialN(b, rig.calls, b.N, 100)
		b.StopTimer()
		var total time.Duration
		for _, d := range t[1] {
			total += d
		}
		reportMetric(b, float64(total.Nanoseconds())/float64(len(t[1])), "ns/op")
		relay := testutil.Percentile(t[0], 50)
		for i, name := range rig.names {
			p50 := testutil.Percentile(t[i], 50)
			reportMetric(b, micros(p50), name+"-p50-µs")
			if i > 0 {
				reportMetric(b, float64(p50)/float64(relay), name+"-p50-ratio")
			}
			if fastTarget(name) {
				atMost(b, name+"'s p50 ÷ the relay's", float64(p50)/float64(relay), maxP50Ratio)
			}
		}
		peerParallel(b, rig)
	})
}

// peerParallel is BenchmarkPeerHTTPCall's second half: b.N calls of each
// path with 16 in flight, in up to 10 rounds, the paths taking turns, the
// serving process's CPU read around each path's turn.
func peerParallel(b *testing.B, rig peerRig) {
	const callers = 16
	rounds := min(max(b.N/500, 1), 10)
	n := len(rig.calls)
	elapsed, cpu, calls := make([]time.Duration, n), make([]time.Duration, n), make([]int, n)
	cpuOK := make([]bool, n)
	for i := range cpuOK {
		cpuOK[i] = true
	}
	for r := range rounds {
		each := max(b.N/rounds, callers)
		for j := range n {
			i := (r + j) % n
			before, ok0 := procCPU(rig.pids[i])
			elapsed[i] += testutil.Hammer(b, rig.calls[i], each, callers)
			after, ok1 := procCPU(rig.pids[i])
			cpuOK[i] = cpuOK[i] && ok0 && ok1
			cpu[i] += after - before
			calls[i] += each
		}
	}
	relay := float64(calls[0]) / elapsed[0].Seconds()
	for i, name := range rig.names {
		rate := float64(calls[i]) / elapsed[i].Seconds()
		reportMetric(b, rate, name+"-calls/s")
		if i > 0 {
			reportMetric(b, rate/relay, name+"-throughput-ratio")
		}
		if fastTarget(name) {
			atLeast(b, name+"'s calls/s with 16 in flight ÷ the relay's", rate/relay, minThroughput)
		}
		if cpuOK[i] {
			perCall := micros(cpu[i]) / float64(calls[i])
			reportMetric(b, perCall, name+"-proc-cpu-µs/call")
			if fastTarget(name) {
				atMost(b, name+"'s process CPU per call with 16 in flight (µs)", perCall, maxCPUMicros)
			}
		}
	}
}

// peerPaths starts the relay, two `mcpvisor serve --http` (fast path on
// and off) and mcp-proxy as processes, each in front of a demo server of its own
// serving up to httpProtocol, connects a client to each, and checks that
// every hop agreed httpProtocol and that each mcpvisor answers calls on
// the path it claims to.
func peerPaths(b *testing.B, peer string) peerRig {
	b.Helper()
	dir := b.TempDir()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	demoEnv := func(name string) map[string]string {
		return map[string]string{serverEnv: "bench-demo", benchProtocolEnv: httpProtocol, "GOGC": childGOGC(),
			benchProtocolFileEnv: filepath.Join(dir, name+".protocol")}
	}
	bin := testutil.BuildMcpvisor(b)

	relayAddr := freeAddr(b)
	relayCmd := exec.Command(self)
	relayCmd.Env = append(os.Environ(), serverEnv+"=bench-relay", relayAddrEnv+"="+relayAddr)
	for k, v := range demoEnv("relay") {
		if k != serverEnv && k != "GOGC" { // the relay's own; its demo server gets them
			relayCmd.Env = append(relayCmd.Env, k+"="+v)
		}
	}
	relayPID := startPeerProcess(b, "relay", relayCmd)
	rcs := connectWhenUp(b, "http://"+relayAddr+"/mcp", "echo")

	serve := func(name, fastPath string) (string, int) {
		var src strings.Builder
		fmt.Fprintf(&src, "mcp_add(\"demo\", {command = {%q}, env = {", self)
		for k, v := range demoEnv(name) {
			fmt.Fprintf(&src, "[%q] = %q, ", k, v)
		}
		src.WriteString("}})\n")
		addr := freeAddr(b)
		cmd := exec.Command(bin, "serve", "-c", writeStartup(b, src.String()), "--no-watch", "--log-level", "warn",
			"--http", addr, "--fast-path", fastPath)
		return "http://" + addr, startPeerProcess(b, name, cmd)
	}
	fastURL, fastPID := serve("mcpvisor-fast", "on")
	fcs := connectWhenUp(b, fastURL+"/mcp", "demo__echo")
	scs := connectWhenUp(b, fastURL+"/servers/demo/mcp", "echo")
	slowURL, slowPID := serve("mcpvisor", "off")
	gcs := connectWhenUp(b, slowURL+"/mcp", "demo__echo")

	rig := peerRig{names: peerPath[:4]}
	if peer != "" {
		rig.names = peerPath
	}
	var pcs *mcp.ClientSession
	var proxyPID int
	if peer != "" {
		pcs, proxyPID = startMcpProxy(b, peer, dir, demoEnv("mcp-proxy"))
	}
	for _, name := range rig.names {
		if name == "mcpvisor-fast-server" {
			continue // the same server as mcpvisor-fast's
		}
		file := filepath.Join(dir, name+".protocol")
		got, err := os.ReadFile(file)
		if err != nil {
			b.Fatalf("%s's demo server answered no initialize (a protocol generation without one?): %v", name, err)
		}
		requireProtocol(b, name+"'s session of the demo server", string(got), httpProtocol)
	}
	hc := httpClient(b)
	requireAnsweredAs(b, hc, fastURL+"/mcp", fcs, "demo__echo", "application/json")
	requireAnsweredAs(b, hc, fastURL+"/servers/demo/mcp", scs, "echo", "application/json")
	requireAnsweredAs(b, hc, slowURL+"/mcp", gcs, "demo__echo", "text/event-stream")
	rig.calls = []func() error{echo(rcs, "echo", "relay"), echo(fcs, "demo__echo", "mcpvisor-fast"),
		echo(scs, "echo", "mcpvisor-fast-server"), echo(gcs, "demo__echo", "mcpvisor")}
	rig.pids = []int{relayPID, fastPID, fastPID, slowPID}
	if peer != "" {
		rig.calls = append(rig.calls, echo(pcs, "echo", "mcp-proxy"))
		rig.pids = append(rig.pids, proxyPID)
	}
	return rig
}

// startMcpProxy starts mcp-proxy (the binary peer) in front of a demo
// server with env, and returns a session of a client on it and its pid.
func startMcpProxy(b *testing.B, peer, dir string, env map[string]string) (*mcp.ClientSession, int) {
	b.Helper()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	proxyAddr := freeAddr(b)
	config := map[string]any{
		"mcpProxy": map[string]any{"baseURL": "http://" + proxyAddr, "addr": proxyAddr, "name": "mcp-proxy",
			"version": "bench", "type": "streamable-http", "options": map[string]any{"logEnabled": false}},
		"mcpServers": map[string]any{"demo": map[string]any{"command": self, "args": []string{},
			"env": env, "options": map[string]any{"logEnabled": false}}},
	}
	configFile := filepath.Join(dir, "mcp-proxy.json")
	data, err := json.Marshal(config)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(configFile, data, 0o644); err != nil {
		b.Fatal(err)
	}
	proxyPID := startPeerProcess(b, "mcp-proxy", exec.Command(peer, "--config", configFile))
	pcs := connectWhenUp(b, "http://"+proxyAddr+"/demo/mcp", "echo")
	return pcs, proxyPID
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(b *testing.B) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// startPeerProcess starts cmd, its output kept for a failure's log, and
// returns its pid; when b ends it is asked to stop (SIGTERM), killed if
// it has not within 15 s (or cannot be asked), and reaped.
func startPeerProcess(b *testing.B, name string, cmd *exec.Cmd) int {
	b.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	b.Cleanup(func() {
		if cmd.Process.Signal(syscall.SIGTERM) != nil { // no SIGTERM on windows
			_ = cmd.Process.Kill()
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = cmd.Wait()
		}()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if b.Failed() {
			b.Logf("%s output:\n%s", name, out.String())
		}
	})
	return cmd.Process.Pid
}

// connectWhenUp connects a client on httpProtocol to url once the process
// behind it lists tool, failing b if it negotiated another version; it is
// closed when b ends.
func connectWhenUp(b *testing.B, url, tool string) *mcp.ClientSession {
	b.Helper()
	hc := httpClient(b)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil)
	var cs *mcp.ClientSession
	require.EventuallyWithT(b, func(c *assert.CollectT) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc},
			&mcp.ClientSessionOptions{ProtocolVersion: httpProtocol})
		require.NoError(c, err, "connect %s", url)
		res, err := s.ListTools(ctx, nil)
		if err != nil || !slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == tool }) {
			_ = s.Close()
			require.Failf(c, "not ready", "%s: tool %q not listed (%v)", url, tool, err)
		}
		cs = s
	}, 60*time.Second, 100*time.Millisecond)
	b.Cleanup(func() { _ = cs.Close() })
	requireProtocol(b, url, cs.InitializeResult().ProtocolVersion, httpProtocol)
	return cs
}

// requireAnsweredAs fails b unless a tools/call of tool on cs's session,
// sent as the go-sdk client sends it, is answered with the content type
// want: the fast path answers with application/json, the go-sdk's
// handler with an event stream.
func requireAnsweredAs(b *testing.B, hc *http.Client, url string, cs *mcp.ClientSession, tool, want string) {
	b.Helper()
	body := `{"jsonrpc":"2.0","id":"probe","method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"x"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", httpProtocol)
	resp, err := hc.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, want) {
		b.Fatalf("tools/call on %s: %s, %s (want %s): %.200s", url, resp.Status, ct, want, got)
	}
}

// procCPU is the user+system CPU time process pid has used, from
// /proc/PID/stat (all its threads; Linux only, in the kernel's ticks of
// 1/100 s); false if it cannot be read.
func procCPU(pid int) (time.Duration, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces: count from after it.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, false
	}
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 13 { // utime and stime are fields 14 and 15, the 12th and 13th after the name
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const tick = 10 * time.Millisecond // USER_HZ, 100 on every Linux port Go supports
	return time.Duration(utime+stime) * tick, true
}

// relayAddrEnv is the address a bench-relay process serves on.
const relayAddrEnv = "MCPVISOR_BENCH_RELAY_ADDR"

// runRelayProcess is the minimal relay (startRelay's) in a process of its
// own, so that its CPU can be read as the proxies' is: it starts this
// binary as a bench-demo server (with this process's environment) and
// relays HTTP on relayAddrEnv's address to it until SIGTERM.
func runRelayProcess() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), serverEnv+"=bench-demo", "GOGC="+childGOGC())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", os.Getenv(relayAddrEnv))
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		_ = l.Close()
		return err
	}
	r := &relay{stdin: stdin, pending: map[string]chan []byte{}}
	go r.read(stdout)
	srv := &http.Server{Handler: r}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	go func() {
		<-stop
		_ = srv.Close()
	}()
	err = srv.Serve(l)
	_ = stdin.Close() // the demo server exits at EOF
	_ = cmd.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
