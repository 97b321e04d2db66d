package gateway_test

// Both protocol generations on one listening address: the sessionless
// 2026-07-28 generation and the 2025-11-25 one of sessions, on every kind
// of endpoint, in front of the go-sdk's conformance everything-server.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// generationRig is the conformance server behind a gateway listening on
// loopback, with a toolset "asks" holding its test_ tools.
func generationRig(t *testing.T) *rig {
	t.Helper()
	bin := buildConformanceServer(t)
	r := newRig(t, map[string]manager.Spec{
		"everything": {Transport: manager.TransportStdio, Command: []string{bin}},
	}, gateway.HTTPOptions{})
	r.gw.SetToolsets(map[string]gateway.Toolset{"asks": {Include: []string{"everything.test_*"}}})
	r.wait("everything")
	return r
}

// connectAt connects an asking client to path asking for protocol
// version. It listens for list changes: on 2026-07-28 that keeps a
// request of its own open beside its calls.
func connectAt(t *testing.T, r *rig, a *askingClient, path, version string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "generations", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.mu.Lock()
			a.elicited = append(a.elicited, req.Params)
			a.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, r.streamable(path), &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err, "connect to %s on %s", path, version)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// named is the one name of names ending in tool.
func named(t *testing.T, names []string, tool string) string {
	t.Helper()
	i := slices.IndexFunc(names, func(n string) bool { return strings.HasSuffix(n, tool) })
	require.GreaterOrEqual(t, i, 0, "%s among %v", tool, names)
	return names[i]
}

// A client of either generation, on the same address, gets the generation
// it asked for on /mcp, /servers/NAME/mcp and /toolsets/NAME/mcp: it lists
// the tools (in name order) and calls one; the newer one is told who
// answers by server/discover, as the endpoint's server would; and a
// server's question during a call reaches the newer one as an input
// request (it cannot be sent a request), the older one as a request. The
// server asks on its shared session, so the question goes to the client
// only while it is the only one mcpvisor serves: the newer client's
// open subscriptions/listen does not make it two.
func TestBothGenerationsOnOneAddress(t *testing.T) {
	t.Parallel()
	r := generationRig(t)
	for _, ep := range []struct{ path, serverName string }{
		{"/mcp", "mcpvisor"},
		{"/servers/everything/mcp", "mcp-conformance-test-server"},
		{"/toolsets/asks/mcp", "mcpvisor"},
	} {
		for _, version := range []string{"2026-07-28", "2025-11-25"} {
			t.Run(ep.path+" "+version, func(t *testing.T) {
				require.Eventually(t, func() bool { return len(r.gw.Clients()) == 0 }, 10*time.Second, 5*time.Millisecond,
					"the clients before have left")
				var a askingClient
				cs := connectAt(t, r, &a, ep.path, version)
				require.Equal(t, version, cs.InitializeResult().ProtocolVersion, "the generation asked for")
				require.NotNil(t, cs.InitializeResult().ServerInfo)
				assert.Equal(t, ep.serverName, cs.InitializeResult().ServerInfo.Name, "who answers")

				names := toolNames(t, cs)
				assert.True(t, slices.IsSorted(names), "listed in name order: %v", names)
				res := call(t, cs, named(t, names, "test_simple_text"), map[string]any{})
				require.False(t, res.IsError, text(res))
				assert.Equal(t, "This is a simple text response for testing.", text(res))

				res = call(t, cs, named(t, names, "test_elicitation"), map[string]any{"message": "Who are you?"})
				require.False(t, res.IsError, text(res))
				assert.Equal(t, "Elicitation result: action=accept, content=map[username:ada]", text(res))
				elicited, _ := a.asked()
				require.Len(t, elicited, 1)
				assert.Equal(t, "Who are you?", elicited[0].Message)
			})
		}
	}
}

// sessionlessPost sends one request of the 2026-07-28 generation to path,
// with the Mcp-Method and Mcp-Name headers given, and returns the status
// and the JSON-RPC response (from a JSON body or an event stream).
func sessionlessPost(t *testing.T, r *rig, path, method, name string, params map[string]any) (int, map[string]any) {
	t.Helper()
	return sessionlessPostAs(t, r, path, method, method, name, params)
}

// sessionlessPostAs is sessionlessPost with an Mcp-Method header of its
// own, headerMethod.
func sessionlessPostAs(t *testing.T, r *rig, path, method, headerMethod, name string, params map[string]any) (int, map[string]any) {
	t.Helper()
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	header := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": headerMethod}
	if name != "" {
		header["Mcp-Name"] = name
	}
	status, got, _ := post(t, r.base+path, string(body), header)
	resp := map[string]any{}
	if strings.HasPrefix(strings.TrimSpace(got), "{") {
		require.NoError(t, json.Unmarshal([]byte(got), &resp), got)
		return status, resp
	}
	sc := bufio.NewScanner(strings.NewReader(got))
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"id"`) {
			require.NoError(t, json.Unmarshal([]byte(data), &resp), data)
			return status, resp
		}
	}
	t.Fatalf("no response in %q (status %d)", got, status)
	return 0, nil
}

// A request whose Mcp-Name header does not name what its body names (here
// the server's own name of a tool /mcp shows prefixed), or whose Mcp-Method
// header is not its method, is refused with a header mismatch; with the
// name the client sees, it is served.
func TestSessionlessHeaderMismatchRefused(t *testing.T) {
	t.Parallel()
	r := generationRig(t)
	status, resp := sessionlessPost(t, r, "/mcp", "tools/list", "", map[string]any{})
	require.Equal(t, 200, status, "%v", resp)
	var tools []string
	for _, tool := range resp["result"].(map[string]any)["tools"].([]any) {
		tools = append(tools, tool.(map[string]any)["name"].(string))
	}
	seen := named(t, tools, "test_simple_text")
	require.NotEqual(t, "test_simple_text", seen, "/mcp shows the tool under a name of its own")

	status, resp = sessionlessPost(t, r, "/mcp", "tools/call", "test_simple_text", map[string]any{"name": seen, "arguments": map[string]any{}})
	assert.Equal(t, 400, status)
	require.Contains(t, resp, "error", "%v", resp)
	rpcErr := resp["error"].(map[string]any)
	assert.Equal(t, float64(mcp.CodeHeaderMismatch), rpcErr["code"], "%v", rpcErr)
	assert.Contains(t, rpcErr["message"], "Mcp-Name")

	status, resp = sessionlessPostAs(t, r, "/mcp", "tools/call", "tools/list", seen, map[string]any{"name": seen, "arguments": map[string]any{}})
	assert.Equal(t, 400, status)
	require.Contains(t, resp, "error", "%v", resp)
	rpcErr = resp["error"].(map[string]any)
	assert.Equal(t, float64(mcp.CodeHeaderMismatch), rpcErr["code"], "%v", rpcErr)
	assert.Contains(t, rpcErr["message"], "Mcp-Method")

	status, resp = sessionlessPost(t, r, "/mcp", "tools/call", seen, map[string]any{"name": seen, "arguments": map[string]any{}})
	require.Equal(t, 200, status, "%v", resp)
	assert.Contains(t, fmt.Sprint(resp["result"]), "simple text response")
}

// A tools list of the 2026-07-28 generation says how it may be cached: on
// a toolset's endpoint it is the client's own, on a server's it is public.
func TestSessionlessListCacheScope(t *testing.T) {
	t.Parallel()
	r := generationRig(t)
	for path, scope := range map[string]string{"/toolsets/asks/mcp": "private", "/servers/everything/mcp": "public"} {
		status, resp := sessionlessPost(t, r, path, "tools/list", "", map[string]any{})
		require.Equal(t, 200, status, "%v", resp)
		res := resp["result"].(map[string]any)
		assert.Equal(t, scope, res["cacheScope"], path)
		assert.Equal(t, float64(0), res["ttlMs"], path)
	}
}

// A 2026-07-28 client that wants to hear of list changes opens
// subscriptions/listen, and hears there that /mcp's tools changed when a
// server joins.
func TestSessionlessListenHearsListChanges(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", nil)}, gateway.HTTPOptions{})
	r.wait("demo")
	n := newNotes()
	c := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, n.options())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, r.streamable("/mcp"), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
	before := toolNames(t, cs)

	require.NoError(t, r.m.Add("more", selfServer(t, "demo", nil)))
	r.wait("more")
	select {
	case <-n.changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed on the listen stream")
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Greater(c, len(toolNames(t, cs)), len(before), "the new server's tools are listed")
	}, 30*time.Second, 50*time.Millisecond)
}
