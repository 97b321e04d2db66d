package gateway_test

// Tests of the gateway with real clients over real transports: a real
// manager keeps real server processes (this test binary re-executed as a
// server, the fault-injecting fake, server-everything from npm), the
// gateway serves them, and go-sdk (and TypeScript SDK) clients use it the
// way an editor or agent would.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/manager"
)

// serverEnv makes the re-executed test binary one of the servers below
// instead of running tests.
const serverEnv = "MCPVISOR_GATEWAY_TEST_SERVER"

// releaseEnv names a file the server waits for before it reads its first
// message: until the test creates it, the server cannot connect.
const releaseEnv = "MCPVISOR_GATEWAY_TEST_RELEASE"

// markEnv names the path prefix of the files the demo mode's block tool
// creates: PREFIX.started when a call begins, PREFIX.cancelled when the
// call is cancelled.
const markEnv = "MCPVISOR_GATEWAY_TEST_MARK"

// badNames are tool names no client accepts as they are.
var badNames = []string{
	"dotted.name", "with space", "path/to/tool", "ns:tool", "héllo", "工具",
	strings.Repeat("x", 200), "a.b", "a_b",
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(serverEnv); mode != "" {
		os.Exit(runServer(mode))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { fakemcptest.Cleanup() }))
}

// runServer is the test binary as an MCP server on stdin/stdout.
func runServer(mode string) int {
	if f := os.Getenv(releaseEnv); f != "" {
		for {
			if _, err := os.Stat(f); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	var err error
	switch mode {
	case "demo":
		s := demo.NewServer()
		mark := os.Getenv(markEnv)
		s.AddTool(&mcp.Tool{Name: "block", Description: "Wait until cancelled.", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				_ = os.WriteFile(mark+".started", nil, 0o644)
				<-ctx.Done()
				_ = os.WriteFile(mark+".cancelled", nil, 0o644)
				return nil, ctx.Err()
			})
		err = s.Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout})
	case "fastpath":
		err = runFastServer()
	case "bench-relay":
		err = runRelayProcess()
	case "bench-stdio-relay":
		err = runStdioRelayProcess()
	case "bench-demo":
		// The demo server of the benchmarks, serving protocol versions up
		// to benchProtocolEnv's.
		tr := &mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout}
		s := demo.NewServer()
		if f := os.Getenv(benchProtocolFileEnv); f != "" {
			s.AddReceivingMiddleware(recordProtocol(f))
		}
		err = s.Run(context.Background(), upTo{tr, os.Getenv(benchProtocolEnv)})
	case "rawargs":
		// A tool that answers with its arguments exactly as it received
		// them, behind a schema the manager validates them against.
		s := mcp.NewServer(&mcp.Implementation{Name: "rawargs", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "echo_raw", InputSchema: rawArgsSchema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
			})
		err = s.Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout})
	case "badnames":
		s := mcp.NewServer(&mcp.Implementation{Name: "badnames", Version: "1"}, nil)
		for _, name := range badNames {
			s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "I am " + name}}}, nil
				})
		}
		err = s.Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout})
	case "features":
		err = featuresServer().Run(context.Background(), upTo{&mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout}, "2025-11-25"})
	case "features-new":
		err = featuresServer().Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout})
	case "serve-stdio":
		err = serveStdioProcess()
	default:
		err = fmt.Errorf("unknown server mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// exists reports whether a file exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// selfServer declares the test binary as a stdio server in mode.
func selfServer(t testing.TB, mode string, env map[string]string) manager.Spec {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	e := map[string]string{serverEnv: mode}
	for k, v := range env {
		e[k] = v
	}
	return manager.Spec{Transport: manager.TransportStdio, Command: []string{self}, Env: e}
}

// rig is a manager, a gateway over it and its HTTP listener, all closed
// when the test ends.
type rig struct {
	t    testing.TB
	m    *manager.Manager
	gw   *gateway.Gateway
	http *gateway.HTTPServer
	base string // "http://127.0.0.1:PORT"
}

// newRig starts a manager, a gateway, the servers (not waiting for them)
// and an HTTP listener with opts (its Addr is chosen here).
func newRig(t testing.TB, servers map[string]manager.Spec, opts gateway.HTTPOptions) *rig {
	t.Helper()
	return newRigWith(t, servers, gateway.Options{}, opts)
}

// newRigWith is newRig with a gateway made with gwOpts (its Source and
// Version set here).
func newRigWith(t testing.TB, servers map[string]manager.Spec, gwOpts gateway.Options, opts gateway.HTTPOptions) *rig {
	t.Helper()
	return newRigOn(t, manager.Options{}, servers, gwOpts, opts)
}

// newRigOn is newRigWith with a manager made with mOpts.
func newRigOn(t testing.TB, mOpts manager.Options, servers map[string]manager.Spec, gwOpts gateway.Options, opts gateway.HTTPOptions) *rig {
	t.Helper()
	m := manager.New(mOpts)
	r := &rig{t: t, m: m}
	t.Cleanup(func() {
		if t.Failed() {
			for _, e := range m.Bus().History(300) {
				t.Logf("event: %s", e.Format())
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if r.http != nil {
			require.NoError(t, r.http.Close(ctx), "HTTP close")
		}
		if r.gw != nil {
			r.gw.Close()
		}
		require.NoError(t, m.Close(ctx), "manager close")
	})
	// The gateway first, as mcpvisor makes it: servers are then told that
	// their client may answer what they ask.
	gwOpts.Source, gwOpts.Version = m, "test"
	r.gw = gateway.New(gwOpts)
	for name, spec := range servers {
		require.NoError(t, m.Add(name, spec))
	}
	opts.Addr = "127.0.0.1:0"
	srv, err := r.gw.Listen(opts)
	require.NoError(t, err)
	r.http = srv
	r.base = "http://" + srv.Addr()
	return r
}

// wait waits until server is connected.
func (r *rig) wait(server string) manager.Status {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := r.m.Wait(ctx, server, manager.StateConnected)
	require.NoError(r.t, err, "waiting for %s (%+v)", server, st)
	return st
}

// notes records what a client was told: list changes and progress.
type notes struct {
	mu       sync.Mutex
	changed  chan struct{} // gets a value at every tools/list_changed
	progress []*mcp.ProgressNotificationParams
}

func newNotes() *notes { return &notes{changed: make(chan struct{}, 100)} }

func (n *notes) progressSeen() []*mcp.ProgressNotificationParams {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), n.progress...)
}

func (n *notes) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case n.changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			n.mu.Lock()
			n.progress = append(n.progress, req.Params)
			n.mu.Unlock()
		},
	}
}

// connect opens a go-sdk client session on transport; it is closed when
// the test ends.
func connect(t testing.TB, transport mcp.Transport, n *notes) *mcp.ClientSession {
	t.Helper()
	if n == nil {
		n = newNotes()
	}
	// An SSE client's session lives as long as the context it connected
	// with: this one ends with the test.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bound := time.AfterFunc(30*time.Second, cancel)
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1.0"}, n.options())
	cs, err := c.Connect(ctx, transport, sessionOver(transport))
	require.NoError(t, err, "connect")
	bound.Stop()
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// sessionOver is how a test client connects over transport: over
// streamable HTTP in the older generation, whose sessions these tests are
// about (a go-sdk client would ask for the sessionless 2026-07-28, which
// generations_test.go covers); elsewhere in its default.
func sessionOver(transport mcp.Transport) *mcp.ClientSessionOptions {
	if _, ok := transport.(*mcp.StreamableClientTransport); ok {
		return &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	return nil
}

// streamable is a streamable HTTP transport to path on r.
func (r *rig) streamable(path string) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: r.base + path, MaxRetries: -1}
}

// stdio connects a client to the gateway's stdio serving of server ("" for
// everything) through pipes, as `mcpvisor serve` does with its own stdin
// and stdout.
func (r *rig) stdio(t testing.TB, server string) mcp.Transport {
	t.Helper()
	inR, inW := io.Pipe()   // client → gateway
	outR, outW := io.Pipe() // gateway → client
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.gw.ServeStdio(ctx, inR, outW, server, "") }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		// The client closing its ends first may leave the gateway a
		// write on a closed pipe, as a client that exits does.
		if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
			require.NoError(t, err, "ServeStdio")
		}
	})
	return &mcp.IOTransport{Reader: outR, Writer: inW}
}

// toolNames lists a session's tool names.
func toolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err, "tools/list")
		names = append(names, tool.Name)
	}
	return names
}

// call calls a tool with a 10 s bound.
func call(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "tools/call %s", name)
	return res
}

// text is a result's text contents, joined.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// pollUntil polls cond until it holds, failing the test after wait.
func pollUntil(t testing.TB, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, wait, 10*time.Millisecond, "%s: not within %v", what, wait)
}

// eventsOf collects a bus's events of some kinds from now on.
type eventLog struct {
	sub *events.Subscription
}

func watchEvents(t testing.TB, m *manager.Manager) *eventLog {
	sub := m.Bus().Subscribe(events.SubscribeOptions{QueueSize: 8192})
	t.Cleanup(sub.Close)
	return &eventLog{sub: sub}
}

// next returns the next event of kind matching ok, failing after wait.
func (l *eventLog) next(t testing.TB, kind events.Kind, wait time.Duration, ok func(events.Event) bool) events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		e, err := l.sub.Recv(ctx)
		require.NoError(t, err, "waiting for a %s event", kind)
		if e.Kind == kind && (ok == nil || ok(e)) {
			return e
		}
	}
}

// bearer adds a token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// legacy connects a client in the older generation, the one with
// sessions (see sessionOver).
var legacy = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
