//go:build linux

package main

// End-to-end tests of `mcpvisor serve`: go-sdk clients use the built
// binary the way an editor does, over its stdin/stdout and over HTTP.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// serveClient connects a go-sdk client to transport; changed gets a value
// at every tools/list_changed.
func serveClient(t *testing.T, ctx context.Context, transport mcp.Transport, changed chan struct{}) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	// With the fast path on (the default) the clients speak the generation
	// it serves, so that their calls take it; the suite's rerun with it
	// off has them speak the go-sdk's default, 2026-07-28.
	var opts *mcp.ClientSessionOptions
	if os.Getenv(gateway.FastPathEnv) != "off" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	cs, err := c.Connect(ctx, transport, opts)
	require.NoError(t, err, "connect")
	return cs
}

// serveOverStdio starts `mcpvisor serve` with args in dir as the command
// of a go-sdk client and connects to it (changed, if not nil, hears its
// tools/list_changed). What serve logs is shown with the test's output and
// checked for data races when the test ends.
func serveOverStdio(t *testing.T, ctx context.Context, dir string, changed chan struct{}, args ...string) (*exec.Cmd, *mcp.ClientSession) {
	t.Helper()
	cmd := command(ctx, t, invocation{dir: dir, args: append([]string{"serve"}, args...)})
	var stderr syncBuffer
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		t.Logf("mcpvisor serve stderr:\n%s", stderr.String())
		checkNoRace(t, stderr.String())
	})
	if changed == nil {
		changed = make(chan struct{}, 100)
	}
	cs := serveClient(t, ctx, &mcp.CommandTransport{Command: cmd}, changed)
	ownPIDs.Store(cmd.Process.Pid, struct{}{})
	return cmd, cs
}

// listedTools polls until the session's tools satisfy ok, failing after
// wait, and returns them.
func listedTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession, wait time.Duration, what string, ok func([]string) bool) []string {
	t.Helper()
	var names []string // written by the check that succeeded, read after it
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var got []string
		for tool, err := range cs.Tools(ctx, nil) {
			require.NoError(c, err, "tools/list")
			got = append(got, tool.Name)
		}
		require.True(c, ok(got), "%s; tools: %v", what, got)
		names = got
	}, wait, 20*time.Millisecond)
	return names
}

func echoText(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool, text string) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": text}})
	require.NoError(t, err, "tools/call %s", tool)
	require.False(t, res.IsError, "%s: %v", tool, res.Content)
	return res.Content[0].(*mcp.TextContent).Text
}

// `mcpvisor serve` as an editor's MCP server command: the client is
// answered, lists and calls the servers of startup.lua, and when a server
// is removed from the file while it is connected, it is told with
// tools/list_changed and the server's tools go. Closing stdin ends
// mcpvisor with exit 0.
func TestServeStdio(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo")+demoDecl("other"))
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	changed := make(chan struct{}, 100)
	cmd, cs := serveOverStdio(t, ctx, dir, changed, "-c", path, "--log-level", "info")

	listedTools(t, ctx, cs, 20*time.Second, "both servers' tools", func(n []string) bool {
		return slices.Contains(n, "demo__echo") && slices.Contains(n, "other__echo")
	})
	require.Equal(t, "over stdio", echoText(t, ctx, cs, "demo__echo", "over stdio"))

	for len(changed) > 0 {
		<-changed
	}
	writeConfig(t, path, demoDecl("demo"))
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no tools/list_changed after a server left startup.lua")
	}
	listedTools(t, ctx, cs, 10*time.Second, "other's tools gone", func(n []string) bool {
		return slices.Contains(n, "demo__echo") && !slices.Contains(n, "other__echo")
	})
	require.Equal(t, "still", echoText(t, ctx, cs, "demo__echo", "still"))

	require.NoError(t, cs.Close(), "mcpvisor serve exits cleanly when its client goes")
	require.Equal(t, 0, cmd.ProcessState.ExitCode())
}

// A client that lists right after connecting is given every server's
// tools at once, under names within the budget mcp_name_budget gives it by
// its name (other clients get --name-budget), and calls them by those
// names; mcpvisor_status says what the servers are doing.
func TestServeFirstListAndNameBudgets(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo")+demoDecl("other")+`
mcp_name_budget("e2e", 20)
mcp_tool("a_rather_long_tool_name_written_in_lua", {handler = function() return "long" end})
`)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	_, cs := serveOverStdio(t, ctx, dir, nil, "-c", path, "--name-budget", "30")
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	long := ""
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		require.LessOrEqual(t, len(tool.Name), 20, tool.Name)
		if strings.HasPrefix(tool.Name, "lua__") {
			long = tool.Name
		}
	}
	require.Contains(t, names, "demo__echo", "the first list")
	require.Contains(t, names, "other__echo", "the first list")
	require.NotEmpty(t, long, "the Lua tool, under a shortened name: %v", names)
	require.Contains(t, names, "mcpvisor_status")
	status, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcpvisor_status"})
	require.NoError(t, err)
	require.Contains(t, status.Content[0].(*mcp.TextContent).Text, "demo: connected")
	call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: long})
	require.NoError(t, err)
	require.Equal(t, "long", call.Content[0].(*mcp.TextContent).Text)
	require.NoError(t, cs.Close())
}

// servingURL matches the log line that says where the gateway listens.
var servingURL = regexp.MustCompile(`url=(http://127\.0\.0\.1:\d+)/mcp`)

// `mcpvisor serve --http` serves streamable HTTP clients on /mcp and
// /servers/NAME/mcp and SSE clients on /sse, each its own session, and
// stops on SIGTERM.
func TestServeHTTP(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo"))
	p := start(t, invocation{dir: dir, args: []string{"serve", "--http", "127.0.0.1:0", "-c", path, "--log-level", "info"}})
	log := p.stderr.waitFor(t, "the serving log line", 20*time.Second, servingURL.MatchString)
	base := servingURL.FindStringSubmatch(log)[1]

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	for _, tt := range []struct {
		name      string
		transport mcp.Transport
		tool      string
	}{
		{"streamable", &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, "demo__echo"},
		{"server endpoint", &mcp.StreamableClientTransport{Endpoint: base + "/servers/demo/mcp", MaxRetries: -1}, "echo"},
		{"sse", &mcp.SSEClientTransport{Endpoint: base + "/sse"}, "demo__echo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cs := serveClient(t, ctx, tt.transport, make(chan struct{}, 1))
			defer cs.Close()
			listedTools(t, ctx, cs, 20*time.Second, tt.tool+" listed", func(n []string) bool { return slices.Contains(n, tt.tool) })
			require.Equal(t, tt.name, echoText(t, ctx, cs, tt.tool, tt.name))
		})
	}

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.True(t, p.wait(shutdownGrace+2*time.Second), "mcpvisor serve --http still runs after SIGTERM")
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "exit code")
	require.True(t, strings.Contains(p.stderr.String(), `msg="serving MCP over HTTP"`))
}

// `serve --server NAME` over stdio is that server under its own names;
// `serve --toolset NAME` is the toolset the config declares, named as on
// /mcp.
func TestServeStdioChoosesWhatToServe(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo")+demoDecl("other")+`mcp_toolset("echoes", {include = {"*.echo"}})`+"\n")
	for _, tt := range []struct {
		flag, name string
		want       []string
	}{
		{"--server", "other", []string{"add", "echo", "fail", "sleep"}},
		{"--toolset", "echoes", []string{"demo__echo", "other__echo"}},
	} {
		t.Run(tt.flag, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
			defer cancel()
			_, cs := serveOverStdio(t, ctx, dir, nil, "-c", path, "--no-watch", tt.flag, tt.name)
			got := listedTools(t, ctx, cs, 20*time.Second, "the chosen tools", func(n []string) bool { return len(n) == len(tt.want) })
			slices.Sort(got)
			require.Equal(t, tt.want, got)
			require.NoError(t, cs.Close())
		})
	}
}

// `mcpvisor serve --mode search`: the client lists the meta-tools and the
// tool the spec pins, finds a tool by the user's tag for it (declared in
// startup.lua) and calls it through call_tool.
func TestServeSearchMode(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, `mcp_add("demo", {command = {MCPVISOR, "demo-server"}, expose = {pin = {"echo"}, tags = {add = {"arithmetic"}}}})`+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	_, cs := serveOverStdio(t, ctx, dir, nil, "-c", path, "--mode", "search", "--log-level", "error")

	listedTools(t, ctx, cs, 20*time.Second, "the meta-tools and the pinned tool", func(n []string) bool {
		return slices.Equal(n, []string{"search_tools", "describe_tools", "call_tool", "demo__echo", "mcpvisor_status"})
	})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "arithmetic", "limit": 1}})
	require.NoError(t, err)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "demo__add (demo)")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "demo__add", "arguments": map[string]any{"a": 20, "b": 22}}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "42", res.Content[0].(*mcp.TextContent).Text)
	require.NoError(t, cs.Close())
}

// serve --mode code lists run_lua alone; a chunk
// composes two of the demo server's tools in one call; a chunk that never
// ends is stopped with an error and the next one runs; a chunk has no io.
func TestServeCodeMode(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo"))
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	_, cs := serveOverStdio(t, ctx, dir, nil, "-c", path, "--mode", "code", "--log-level", "error")

	listedTools(t, ctx, cs, 20*time.Second, "run_lua alone", func(n []string) bool {
		return slices.Equal(n, []string{"run_lua"})
	})
	run := func(code string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_lua", Arguments: map[string]any{"code": code}})
		require.NoError(t, err)
		return res
	}
	text := func(res *mcp.CallToolResult) string { return res.Content[0].(*mcp.TextContent).Text }

	res := run(`local sum = tools.demo.add{a = 2, b = 3}
return tools.demo.echo{text = "sum " .. sum.sum}`)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "sum 5", text(res))

	res = run(`while true do end`)
	require.True(t, res.IsError)
	require.Contains(t, text(res), "stopped")
	res = run(`return tools.demo.echo{text = "after"}`)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "after", text(res))

	res = run(`return io.open("/etc/passwd"):read("*a")`)
	require.True(t, res.IsError)
	require.NotContains(t, text(res), "root:")
	require.NoError(t, cs.Close())
}

// The run_lua limits are the flags': a chunk over --code-calls is stopped
// naming the limit, and its text past --code-output is cut with a note.
func TestServeCodeLimits(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo"))
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	_, cs := serveOverStdio(t, ctx, dir, nil, "-c", path, "--mode", "code", "--log-level", "error",
		"--code-calls", "2", "--code-output", "300")
	run := func(code string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_lua", Arguments: map[string]any{"code": code}})
		require.NoError(t, err)
		return res.Content[0].(*mcp.TextContent).Text
	}
	require.Contains(t, run(`for i = 1, 3 do tools.demo.echo{text = "x"} end`), "the chunk made more than 2 tool calls (the limit per run)")
	out := run(`return string.rep("y", 1000)`)
	require.Contains(t, out, "the limit is 300 bytes")
	require.Less(t, len(out), 600, "cut near the limit: %q", out)
	require.NoError(t, cs.Close())
}
