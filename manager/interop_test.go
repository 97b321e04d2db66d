package manager_test

// Interop tests: the manager against the official reference server,
// @modelcontextprotocol/server-everything, over each transport, in real
// time. The interop helpers skip these tests when node or the pinned
// server is not installed (npm ci --prefix internal/interop), and fail them
// when MCPVISOR_INTEROP=1.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/interop"
	"github.com/mcpvisor/mcpvisor/manager"
)

// everythingBaseTools are the tools server-everything registers for every
// client (internal/interop/doc.go).
var everythingBaseTools = []string{
	"echo",
	"get-annotated-message",
	"get-env",
	"get-resource-links",
	"get-resource-reference",
	"get-structured-content",
	"get-sum",
	"get-tiny-image",
	"gzip-file-as-resource",
	"toggle-simulated-logging",
	"toggle-subscriber-updates",
	"trigger-long-running-operation",
}

const (
	// interopConnectWait bounds the first connection: node starts in well
	// under a second, but CI machines can be slow.
	interopConnectWait = 30 * time.Second
	// interopProtocol is what go-sdk v1.8.0 negotiates with the pinned
	// server, whose TS SDK does not know 2026-07-28 (internal/interop/doc.go).
	interopProtocol = "2025-11-25"
)

// interopEnv returns what interop.Env adds to this process's environment,
// as Spec.Env (which the manager adds to the host's environment itself).
func interopEnv() map[string]string {
	base := make(map[string]bool)
	for _, kv := range os.Environ() {
		base[kv] = true
	}
	extra := make(map[string]string)
	for _, kv := range interop.Env() {
		if !base[kv] {
			k, v, _ := strings.Cut(kv, "=")
			extra[k] = v
		}
	}
	return extra
}

func TestInterop(t *testing.T) {
	tests := []struct {
		name string
		// spec starts the server if needed and declares it.
		spec func(t *testing.T) manager.Spec
	}{
		{"stdio", func(t *testing.T) manager.Spec {
			return manager.Spec{
				Transport: manager.TransportStdio,
				Command:   interop.StdioCommand(t),
				Env:       interopEnv(),
			}
		}},
		{"streamable HTTP", func(t *testing.T) manager.Spec {
			return manager.Spec{Transport: manager.TransportHTTP, URL: interop.StartHTTP(t)}
		}},
		{"SSE", func(t *testing.T) manager.Spec {
			return manager.Spec{Transport: manager.TransportSSE, URL: interop.StartSSE(t)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec(t)
			// After spec: the HTTP server's own goroutines (its process
			// waiter) live until the test's cleanup and are not ours.
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			if spec.Transport == manager.TransportStdio {
				defer interopNoZombies(t)
			}
			testInterop(t, spec)
		})
	}
}

// testInterop runs one server through the manager: connect, discover,
// call, fail to call, remove. It closes the manager before returning.
func testInterop(t *testing.T, spec manager.Spec) {
	m := manager.New(manager.Options{})
	defer func() {
		if t.Failed() {
			for _, e := range m.Bus().History(200) {
				t.Logf("event: %s", e.Format())
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, m.Close(ctx), "Close")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), interopConnectWait)
	defer cancel()

	require.NoError(t, m.Add("everything", spec))
	st, err := m.Wait(ctx, "everything", manager.StateConnected)
	require.NoError(t, err, "waiting for connected; status %+v", st)

	t.Run("status", func(t *testing.T) {
		st, err := m.Status("everything")
		require.NoError(t, err)
		assert.Equal(t, manager.StateConnected, st.State)
		assert.Equal(t, spec.Transport, st.Transport)
		assert.Equal(t, interopProtocol, st.Protocol)
		assert.Equal(t, "mcp-servers/everything", st.ServerName)
		assert.NotEmpty(t, st.ServerVersion)
		assert.Empty(t, st.LastError)
		assert.Zero(t, st.Attempts)
		assert.False(t, st.ConnectedAt.IsZero(), "ConnectedAt")
		assert.GreaterOrEqual(t, st.Tools, len(everythingBaseTools))
		if spec.Transport == manager.TransportStdio {
			assert.Positive(t, st.PID)
			assert.Equal(t, strings.Join(spec.Command, " "), st.Endpoint)
		} else {
			assert.Zero(t, st.PID)
			assert.Equal(t, spec.URL, st.Endpoint)
		}
	})

	t.Run("tools", func(t *testing.T) {
		tools, err := m.Tools("everything")
		require.NoError(t, err)
		var names []string
		for _, ti := range tools {
			names = append(names, ti.FullName)
			assert.Equal(t, "everything", ti.Server, ti.FullName)
			assert.Equal(t, "everything."+ti.Name, ti.FullName)
			assert.True(t, ti.Available, "%s available", ti.FullName)
		}
		for _, base := range everythingBaseTools {
			assert.Contains(t, names, "everything."+base)
		}
		i := slices.IndexFunc(tools, func(ti manager.ToolInfo) bool { return ti.FullName == "everything.echo" })
		require.GreaterOrEqual(t, i, 0, "everything.echo in %v", names)
		echo := tools[i]
		assert.NotEmpty(t, echo.Description)
		require.NotNil(t, echo.InputSchema, "echo's input schema")
		raw, err := json.Marshal(echo.InputSchema)
		require.NoError(t, err)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		require.NoError(t, json.Unmarshal(raw, &schema), "%s", raw)
		assert.Equal(t, "object", schema.Type, "%s", raw)
		assert.Contains(t, schema.Properties, "message", "%s", raw)
		assert.Contains(t, schema.Required, "message", "%s", raw)
	})

	t.Run("call echo", func(t *testing.T) {
		for _, name := range []string{"everything.echo", "echo"} { // full and bare (R-NS-1)
			res, err := m.Call(ctx, name, map[string]any{"message": "hi"}, manager.CallOptions{})
			require.NoError(t, err, name)
			require.False(t, res.IsError, "%s: %+v", name, res.Content)
			require.Len(t, res.Content, 1, name)
			text, ok := res.Content[0].(*mcp.TextContent)
			require.True(t, ok, "%s: content is %T", name, res.Content[0])
			assert.Equal(t, "Echo: hi", text.Text, name)
		}
	})

	t.Run("call structured content", func(t *testing.T) {
		res, err := m.Call(ctx, "everything.get-structured-content", map[string]any{"location": "Chicago"}, manager.CallOptions{})
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
		require.NotNil(t, res.StructuredContent)
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var weather struct {
			Temperature float64 `json:"temperature"`
			Conditions  string  `json:"conditions"`
			Humidity    float64 `json:"humidity"`
		}
		require.NoError(t, json.Unmarshal(raw, &weather), "%s", raw)
		assert.Equal(t, 36.0, weather.Temperature)
		assert.Equal(t, "Light rain / drizzle", weather.Conditions)
		assert.Equal(t, 82.0, weather.Humidity)
	})

	t.Run("call unknown tool", func(t *testing.T) {
		for _, name := range []string{"everything.no-such-tool", "no-such-tool"} {
			_, err := m.Call(ctx, name, map[string]any{}, manager.CallOptions{})
			require.Error(t, err, name)
			assert.True(t, errors.Is(err, manager.ErrToolNotFound), "%s: %v", name, err)
			assert.Contains(t, err.Error(), "no-such-tool")
		}
	})

	// The server is still connected after all that.
	st, err = m.Status("everything")
	require.NoError(t, err)
	require.Equal(t, manager.StateConnected, st.State, "last error: %s", st.LastError)

	t.Run("remove", func(t *testing.T) {
		done, err := m.Remove("everything")
		require.NoError(t, err)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("server not disposed 15s after Remove")
		}
		_, err = m.Status("everything")
		assert.True(t, errors.Is(err, manager.ErrServerNotFound), "Status after Remove: %v", err)
		tools, err := m.Tools("")
		require.NoError(t, err)
		assert.Empty(t, tools, "tools after Remove")
		if spec.Transport == manager.TransportStdio {
			// Setpgid: the group id is the server's pid.
			interopRequireGroupGone(t, st.PID)
		}
	})
}

// ---- /proc checks, after the stdio server is removed ----

// interopProc is a process as /proc/PID/stat describes it.
type interopProc struct {
	pid, ppid, pgrp int
	state           byte
}

func interopProcs() []interopProc {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []interopProc
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')') // comm may hold spaces and parens
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		p := interopProc{state: f[0][0]}
		p.pid, _ = strconv.Atoi(strings.Fields(s)[0])
		p.ppid, _ = strconv.Atoi(f[1])
		p.pgrp, _ = strconv.Atoi(f[2])
		out = append(out, p)
	}
	return out
}

// interopRequireGroupGone asserts that no member of process group pgid
// runs. A group SIGKILL is delivered asynchronously and there is nothing to
// wait on for a process we are not the parent of, so this polls for at most
// 2s.
func interopRequireGroupGone(t *testing.T, pgid int) {
	t.Helper()
	require.Positive(t, pgid, "the stdio server's pid")
	running := func() []int {
		var pids []int
		for _, p := range interopProcs() {
			if p.pgrp == pgid && p.state != 'Z' {
				pids = append(pids, p.pid)
			}
		}
		return pids
	}
	deadline := time.Now().Add(2 * time.Second)
	for len(running()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.Empty(t, running(), "members of the server's process group %d still run", pgid)
}

// interopNoZombies asserts that no child of the test process is a zombie.
func interopNoZombies(t *testing.T) {
	t.Helper()
	for _, p := range interopProcs() {
		if p.ppid == os.Getpid() && p.state == 'Z' {
			t.Errorf("child %d of the test process is a zombie (never reaped)", p.pid)
		}
	}
}
