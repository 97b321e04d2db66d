package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// httpFastRig is a rig whose gateway has the fast path as setting says,
// serving as "demo" the fast path's test server over streamable HTTP on
// loopback (answering in JSON when jsonResponse), with a tool more: ask,
// which asks its client for a name and answers with it.
func httpFastRig(t *testing.T, setting, mark string, jsonResponse bool) *rig {
	t.Helper()
	srv := fastServer(mark)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who are you?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %v", res.Action, res.Content["name"])}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse}))
	t.Cleanup(hs.Close) // after the rig's, which ends the manager's streams
	spec := manager.Spec{Transport: manager.TransportHTTP, URL: hs.URL}
	r := newRigWith(t, map[string]manager.Spec{"demo": spec}, gateway.Options{FastPath: setting}, gateway.HTTPOptions{})
	r.wait("demo")
	return r
}

// A call to a streamable HTTP server is answered by the fast path as the
// go-sdk path answers it, whether the server answers in JSON or on an
// event stream: results, a tool's isError, arguments the schema refuses,
// a JSON-RPC error from the server, a tool that logs on its stream.
func TestFastPathToHTTPAnswersAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("json response %v", jsonResponse), func(t *testing.T) {
			t.Parallel()
			on := httpFastRig(t, "on", t.TempDir()+"/m", jsonResponse)
			off := httpFastRig(t, "off", t.TempDir()+"/m", jsonResponse)
			requireAnsweredAlike(t, on, off, []fastCall{
				{"echo", map[string]any{"text": "héllo\nworld"}, true},
				{"add", map[string]any{"a": 2, "b": 40}, true},
				{"fail", map[string]any{"message": "no luck"}, true},
				{"echo", map[string]any{"text": 5}, true}, // refused by the schema
				{"boom", map[string]any{}, true},
				{"say", map[string]any{}, true},
			})
		})
	}
}

// A streamable HTTP server's question during a fast call (on the call's
// response stream) is asked of the calling client, and its answer reaches
// the server, as on the go-sdk path.
func TestFastPathToHTTPAsksTheCallingClient(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"on", "off"} {
		t.Run("fast path "+setting, func(t *testing.T) {
			t.Parallel()
			r := httpFastRig(t, setting, t.TempDir()+"/m", false)
			asked := make(chan string, 1)
			c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1.0"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked <- req.Params.Message
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, r.streamable("/servers/demo/mcp"), &mcp.ClientSessionOptions{ProtocolVersion: fastProtocol})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			res := call(t, cs, "ask", map[string]any{})
			require.False(t, res.IsError, text(res))
			require.Equal(t, "accept: ada", text(res))
			require.Equal(t, "who are you?", <-asked)
			if setting == "on" {
				require.EqualValues(t, 1, gateway.FastServed(r.gw))
			}
		})
	}
}

// A fast call to a streamable HTTP server ends upstream (the server is
// sent notifications/cancelled) when its client cancels it.
func TestFastPathToHTTPCancellationReachesTheServer(t *testing.T) {
	t.Parallel()
	mark := t.TempDir() + "/block"
	r := httpFastRig(t, "on", mark, false)
	session := fastSession(t, r, "/servers/demo/mcp")
	answered := make(chan string, 1)
	go func() {
		_, body, _ := postCtx(context.Background(), r.base+"/servers/demo/mcp", `{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{"name":"block","arguments":{}}}`, session)
		answered <- body
	}()
	pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })
	code, body, _ := post(t, r.base+"/servers/demo/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-7","reason":"changed my mind"}}`, session)
	require.Equal(t, http.StatusAccepted, code, body)
	pollUntil(t, 10*time.Second, "the server's request cancelled", func() bool { return exists(mark + ".cancelled") })
	select {
	case body := <-answered:
		require.Contains(t, body, `"id":"c-7"`)
		require.Contains(t, body, `"isError":true`)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call's POST was never answered")
	}
	require.EqualValues(t, 1, gateway.FastServed(r.gw))
	stillServes(t, r)
}
