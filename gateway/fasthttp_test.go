package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
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
	return httpFastRigBehind(t, setting, mark, jsonResponse, nil)
}

// httpFastRigBehind is httpFastRig with the server behind front, a
// middleware that may answer in its place (nil: none), and with its
// tools listed: status500, html and cut, which only front answers.
func httpFastRigBehind(t *testing.T, setting, mark string, jsonResponse bool, front func(http.Handler) http.Handler) *rig {
	t.Helper()
	srv := fastServer(mark)
	if front != nil {
		for _, name := range []string{"status500", "html", "cut"} {
			srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return nil, errors.New("the middleware answers this call")
				})
		}
	}
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who are you?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %v", res.Action, res.Content["name"])}}}, nil
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	if front != nil {
		h = front(h)
	}
	hs := httptest.NewServer(h)
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

// misbehaving answers the calls of its tools in the server's place: a 500
// to status500, an HTML page to html, and to cut an event stream that
// ends after a log message in an event with an id; the GET that resumes
// that stream (Last-Event-ID) gets the call's answer.
func misbehaving(next http.Handler) http.Handler {
	var mu sync.Mutex
	cut := map[string]json.RawMessage{} // the ids of the calls cut, by last event id; mu guards it
	n := 0                              // numbers the cut streams' events; mu guards it
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if last := r.Header.Get("Last-Event-ID"); r.Method == http.MethodGet && last != "" {
			mu.Lock()
			id, ok := cut[last]
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			if ok {
				fmt.Fprintf(w, "id: %s.1\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", last, id)
			}
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage
			Method string
			Params struct{ Name string }
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != "tools/call" {
			next.ServeHTTP(w, r)
			return
		}
		switch msg.Params.Name {
		case "status500":
			http.Error(w, "the upstream fell over", http.StatusInternalServerError)
		case "html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><body>Log in to continue</body></html>")
		case "cut":
			mu.Lock()
			n++
			last := fmt.Sprintf("ev-%d", n)
			cut[last] = msg.ID
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: %s\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"half way\"}}\n\n", last)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// A call to a streamable HTTP server that misbehaves is answered by the
// fast path as the go-sdk path answers it: a 500 and an answer that is
// not JSON-RPC fail alike (the second ends the upstream session, which is
// replaced), and a stream cut after an event with an id is resumed.
func TestFastPathToHTTPFailsAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	on := httpFastRigBehind(t, "on", t.TempDir()+"/m", false, misbehaving)
	off := httpFastRigBehind(t, "off", t.TempDir()+"/m", false, misbehaving)
	requireAnsweredAlike(t, on, off, []fastCall{
		{"status500", map[string]any{}, true},
		{"cut", map[string]any{}, true},
		{"html", map[string]any{}, true},
		{"echo", map[string]any{"text": "still here"}, true},
	})
}
