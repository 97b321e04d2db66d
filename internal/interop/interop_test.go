//go:build linux

package interop_test

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/interop"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// lateTools are registered after notifications/initialized for a client that
// advertises no capabilities, each announced by tools/list_changed.
var lateTools = []string{"simulate-research-query"}

// observer records the notifications a client session receives.
type observer struct {
	mu              sync.Mutex
	progress        []mcp.ProgressNotificationParams
	toolListChanged int
	resListChanged  int
}

func (o *observer) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		// No roots: otherwise the server sends roots/list ~350 ms after
		// start and a Close racing it waits for the terminate timeout.
		Capabilities: &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.progress = append(o.progress, *r.Params)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.toolListChanged++
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.resListChanged++
		},
	}
}

func (o *observer) snapshot() (progress []mcp.ProgressNotificationParams, toolListChanged, resListChanged int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.progress), o.toolListChanged, o.resListChanged
}

func newClient(o *observer) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcpvisor-interop-test", Version: "0"}, o.clientOptions())
}

// exercise runs the common checks on a connected session.
func exercise(t *testing.T, ctx context.Context, cs *mcp.ClientSession, o *observer) {
	t.Helper()

	init := cs.InitializeResult()
	require.NotNil(t, init)
	t.Logf("negotiated protocol %s with %s %s", init.ProtocolVersion, init.ServerInfo.Name, init.ServerInfo.Version)
	assert.Equal(t, "2025-11-25", init.ProtocolVersion)
	assert.Equal(t, "mcp-servers/everything", init.ServerInfo.Name)
	require.NotNil(t, init.Capabilities.Tools)
	assert.True(t, init.Capabilities.Tools.ListChanged, "tools.listChanged")

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err, "tools/list")
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	t.Logf("tools (%d): %v", len(names), names)
	want := append(slices.Clone(interop.BaseTools), lateTools...)
	sort.Strings(want)
	assert.Equal(t, want, names)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "echo",
		Arguments: map[string]any{"message": "hello, mcpvisor"},
	})
	require.NoError(t, err, "tools/call echo")
	require.False(t, res.IsError, "echo: %+v", res.Content)
	require.Len(t, res.Content, 1)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "echo content is %T", res.Content[0])
	assert.Equal(t, "Echo: hello, mcpvisor", text.Text)

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "get-structured-content",
		Arguments: map[string]any{"location": "Chicago"},
	})
	require.NoError(t, err, "tools/call get-structured-content")
	require.False(t, res.IsError, "get-structured-content: %+v", res.Content)
	assert.Equal(t,
		map[string]any{"temperature": 36.0, "conditions": "Light rain / drizzle", "humidity": 82.0},
		res.StructuredContent)

	params := &mcp.CallToolParams{
		Name:      "trigger-long-running-operation",
		Arguments: map[string]any{"duration": 0.2, "steps": 2},
	}
	params.SetProgressToken("op-1")
	res, err = cs.CallTool(ctx, params)
	require.NoError(t, err, "tools/call trigger-long-running-operation")
	require.False(t, res.IsError, "trigger-long-running-operation: %+v", res.Content)
	// Progress notifications precede the result on the wire, but the SDK
	// dispatches notifications asynchronously.
	require.Eventually(t, func() bool {
		p, _, _ := o.snapshot()
		return len(p) == 2
	}, 5*time.Second, 5*time.Millisecond, "two progress notifications")
	progress, _, _ := o.snapshot()
	for i, p := range progress {
		assert.Equal(t, "op-1", p.ProgressToken)
		assert.Equal(t, float64(i+1), p.Progress)
		assert.Equal(t, 2.0, p.Total)
	}

	// A data: URI keeps the tool off the network. Registering the session
	// resource it returns announces resources/list_changed.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "gzip-file-as-resource",
		Arguments: map[string]any{"name": "hello.txt.gz", "data": "data:text/plain;base64,aGVsbG8K"},
	})
	require.NoError(t, err, "tools/call gzip-file-as-resource")
	require.False(t, res.IsError, "gzip-file-as-resource: %+v", res.Content)
	require.Len(t, res.Content, 1)
	link, ok := res.Content[0].(*mcp.ResourceLink)
	require.True(t, ok, "gzip-file-as-resource content is %T", res.Content[0])
	assert.Equal(t, "hello.txt.gz", link.Name)
	require.Eventually(t, func() bool {
		_, _, r := o.snapshot()
		return r > 0
	}, 5*time.Second, 5*time.Millisecond, "resources/list_changed")

	_, toolsChanged, resChanged := o.snapshot()
	t.Logf("list_changed notifications received: tools %d, resources %d", toolsChanged, resChanged)
}

func connect(t *testing.T, ctx context.Context, transport mcp.Transport, o *observer) *mcp.ClientSession {
	t.Helper()
	start := time.Now()
	cs, err := newClient(o).Connect(ctx, transport, nil)
	require.NoError(t, err, "connect")
	t.Logf("connect took %v", time.Since(start).Round(time.Millisecond))
	return cs
}

func TestStdio(t *testing.T) {
	argv := interop.StdioCommand(t)
	require.Len(t, argv, 3)
	assert.True(t, filepath.IsAbs(argv[0]), argv[0])
	assert.FileExists(t, argv[1])
	assert.Equal(t, "stdio", argv[2])

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = interop.Env()
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	t.Cleanup(func() {
		// Backstop: nothing of the group may survive the test.
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	})

	o := &observer{}
	cs := connect(t, ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, o)
	exercise(t, ctx, cs, o)

	start := time.Now()
	err := cs.Close()
	t.Logf("close took %v (close err: %v)", time.Since(start).Round(time.Millisecond), err)
	require.NotNil(t, cmd.ProcessState, "server not reaped by Close")
	assert.True(t, cmd.ProcessState.Exited(), "server should exit on stdin EOF, got %v", cmd.ProcessState)
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	// The group is empty: signal 0 finds no process.
	assert.ErrorIs(t, syscall.Kill(-cmd.Process.Pid, 0), syscall.ESRCH, "process group still alive")
	t.Logf("server stderr:\n%s", stderr.String())
}

func TestStreamableHTTP(t *testing.T) {
	endpoint := interop.StartHTTP(t)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/mcp$`, endpoint)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := &observer{}
	cs := connect(t, ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: 1}, o)
	exercise(t, ctx, cs, o)
	start := time.Now()
	require.NoError(t, cs.Close())
	t.Logf("close took %v", time.Since(start).Round(time.Millisecond))
}

func TestSSE(t *testing.T) {
	endpoint := interop.StartSSE(t)
	assert.Regexp(t, `^http://127\.0\.0\.1:\d+/sse$`, endpoint)

	// The legacy SSE session lives only as long as the Connect context.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := &observer{}
	cs := connect(t, ctx, &mcp.SSEClientTransport{Endpoint: endpoint}, o)
	exercise(t, ctx, cs, o)
	start := time.Now()
	require.NoError(t, cs.Close())
	t.Logf("close took %v", time.Since(start).Round(time.Millisecond))
}

// TestStartHTTPCleanup checks that the cleanup registered by StartHTTP stops
// the server: afterwards its port refuses connections.
func TestStartHTTPCleanup(t *testing.T) {
	var endpoint string
	t.Run("start", func(t *testing.T) {
		endpoint = interop.StartHTTP(t)
	})
	if endpoint == "" {
		t.Skip("server not started")
	}
	addr := endpoint[len("http://") : len(endpoint)-len("/mcp")]
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	assert.Error(t, err, "server on %s still accepting connections after cleanup", addr)
}

func TestServerDir(t *testing.T) {
	dir := interop.ServerDir(t)
	assert.True(t, filepath.IsAbs(dir), dir)
	assert.FileExists(t, filepath.Join(dir, "package.json"))
	assert.Equal(t, "server-everything", filepath.Base(dir))
}
