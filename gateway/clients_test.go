package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A client is answered at once even while no server has connected yet; it
// sees an empty list, then a tools/list_changed, then the server's tools,
// which it can call.
func TestInitializeWhileServersConnect(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "streamable HTTP"} {
		t.Run(transport, func(t *testing.T) {
			release := filepath.Join(t.TempDir(), "release")
			r := newRig(t, map[string]manager.Spec{"late": selfServer(t, "demo", map[string]string{releaseEnv: release})}, gateway.HTTPOptions{})
			n := newNotes()
			var tr mcp.Transport
			if transport == "stdio" {
				tr = r.stdio(t, "")
			} else {
				tr = r.streamable("/mcp")
			}
			// The server waits to be released, which comes only after
			// initialize: it was answered while the server connected.
			cs := connect(t, tr, n)
			st, err := r.m.Status("late")
			require.NoError(t, err)
			require.NotEqual(t, manager.StateConnected, st.State, "the server connected before it was released")
			require.Empty(t, toolNames(t, cs), "tools before any server connected")

			require.NoError(t, os.WriteFile(release, nil, 0o644))
			select {
			case <-n.changed:
			case <-time.After(20 * time.Second):
				t.Fatal("no tools/list_changed after the server connected")
			}
			pollUntil(t, 5*time.Second, "late__echo listed", func() bool {
				return slices.Contains(toolNames(t, cs), "late__echo")
			})
			res := call(t, cs, "late__echo", map[string]any{"text": "hi"})
			require.False(t, res.IsError, text(res))
			require.Equal(t, "hi", text(res))
		})
	}
}

// validName is what Claude Desktop and the model APIs accept.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Tool names with dots, spaces, slashes, colons, Unicode or 200 characters
// are each listed on /mcp under a valid, distinct name, and each such name
// calls the tool it stands for. A server's own endpoint lists them as the
// server named them, and calls them by those names.
func TestBadToolNames(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"odd": selfServer(t, "badnames", nil)}, gateway.HTTPOptions{})
	r.wait("odd")
	cs := connect(t, r.streamable("/mcp"), nil)
	names := toolNames(t, cs)
	require.Len(t, names, len(badNames))
	seen := map[string]bool{}
	for _, name := range names {
		require.Regexp(t, validName, name)
		require.False(t, seen[name], "%q listed twice", name)
		seen[name] = true
	}
	called := map[string]bool{}
	for _, name := range names {
		res := call(t, cs, name, map[string]any{})
		require.False(t, res.IsError, "%s: %s", name, text(res))
		own, ok := strings.CutPrefix(text(res), "I am ")
		require.True(t, ok, "%s answered %q", name, text(res))
		called[own] = true
	}
	require.Len(t, called, len(badNames), "every tool is reachable by exactly one name")
	assert.Contains(t, names, "odd__a_b", "a name valid as it is keeps its plain name")

	own := connect(t, r.streamable("/servers/odd/mcp"), nil)
	require.ElementsMatch(t, badNames, toolNames(t, own))
	for _, name := range badNames {
		res := call(t, own, name, map[string]any{})
		require.False(t, res.IsError, "%s: %s", name, text(res))
		require.Equal(t, "I am "+name, text(res))
	}
}

// A server's own endpoint shows its tools under its own names, and its
// server info; /mcp shows them prefixed.
func TestServerEndpointOwnNames(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{
		"one": selfServer(t, "demo", nil),
		"two": selfServer(t, "demo", nil),
	}, gateway.HTTPOptions{})
	r.wait("one")
	r.wait("two")
	own := connect(t, r.streamable("/servers/one/mcp"), nil)
	require.ElementsMatch(t, []string{"echo", "add", "sleep", "fail", "block"}, toolNames(t, own))
	init := own.InitializeResult()
	require.Equal(t, "mcpvisor-demo", init.ServerInfo.Name)
	require.Contains(t, init.Instructions, "A demo server built into mcpvisor", "the server's own instructions")
	require.False(t, init.Capabilities.Resources.Subscribe, "the demo server offers no subscriptions, so neither does its endpoint")
	res := call(t, own, "add", map[string]any{"a": 2, "b": 3})
	require.False(t, res.IsError, text(res))
	require.Equal(t, map[string]any{"sum": float64(5)}, res.StructuredContent)

	all := connect(t, r.streamable("/mcp"), nil)
	require.ElementsMatch(t, []string{"one__echo", "one__add", "one__sleep", "one__fail", "one__block",
		"two__echo", "two__add", "two__sleep", "two__fail", "two__block"}, toolNames(t, all))
	require.True(t, all.InitializeResult().Capabilities.Resources.Subscribe, "/mcp passes subscriptions to whichever server lists the resource")
}

// Killing a server process during a call ends that call with an error
// result naming the server, promptly; the manager reconnects and the next
// call works.
func TestServerKilledDuringCall(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "block")
	r := newRig(t, map[string]manager.Spec{"victim": selfServer(t, "demo", map[string]string{markEnv: mark})}, gateway.HTTPOptions{})
	st := r.wait("victim")
	require.NotZero(t, st.PID)
	cs := connect(t, r.streamable("/mcp"), nil)
	toolNames(t, cs) // the listing has the tools before the call

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	got := make(chan outcome, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := watchEvents(t, r.m)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "victim__block", Arguments: map[string]any{}})
		got <- outcome{res, err}
	}()
	pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })
	victim, err := os.FindProcess(st.PID)
	require.NoError(t, err)
	require.NoError(t, victim.Kill())
	var o outcome
	select {
	case o = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the call hangs after its server died")
	}
	require.NoError(t, o.err)
	require.True(t, o.res.IsError, "a call whose server died is an error result")
	require.Contains(t, text(o.res), `"victim"`, "the error names the server")

	log.next(t, events.KindConnected, 30*time.Second, func(e events.Event) bool { return e.Server == "victim" })
	res := call(t, cs, "victim__echo", map[string]any{"text": "again"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "again", text(res))
}

// A call to a server that cannot start answers at once with an error
// naming the server, on /mcp and on its own endpoint.
func TestCallToDownServer(t *testing.T) {
	t.Parallel()
	down := manager.Spec{Transport: manager.TransportStdio, Command: []string{"/nonexistent/mcpvisor-gateway-test/no-server"}}
	r := newRig(t, map[string]manager.Spec{"down": down, "up": selfServer(t, "demo", nil)}, gateway.HTTPOptions{})
	r.wait("up")
	pollUntil(t, 10*time.Second, "down has failed once", func() bool {
		s, _ := r.m.Status("down")
		return s.LastError != ""
	})
	for _, ep := range []struct{ path, tool string }{{"/mcp", "down__echo"}, {"/servers/down/mcp", "echo"}} {
		cs := connect(t, r.streamable(ep.path), nil)
		res := call(t, cs, ep.tool, map[string]any{"text": "x"})
		require.True(t, res.IsError, "%s on %s", ep.tool, ep.path)
		require.Contains(t, text(res), `"down"`, "the error names the server")
		// Its failure, not a timeout waiting for it.
		require.True(t, strings.HasPrefix(text(res), "CONNECTION_FAILED: "), "the error leads with its code: %s", text(res))
	}
}
