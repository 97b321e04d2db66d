package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/expose"
	"github.com/mcpvisor/mcpvisor/manager"
)

// runFastServer is the demo server with what the fast path's tests need
// beside it: block (waits until cancelled, marking markEnv's files), tick
// (reports three steps of progress saying its label, then answers; with
// meet, once another such call has come), trace (answers with the trace context
// its request carried), confirm (asks its client, and answers with what it
// said), tickconfirm (reports progress before and after asking its
// client) and boom (answers a JSON-RPC error).
func runFastServer() error {
	s := fastServer(os.Getenv(markEnv))
	// On the protocol the raw path speaks upstream.
	return s.Run(context.Background(), upTo{&mcp.IOTransport{Reader: os.Stdin, Writer: os.Stdout}, fastProtocol})
}

// fastServer is the demo server with the fast path's test tools, marking
// mark's files.
func fastServer(mark string) *mcp.Server {
	s := demo.NewServer()
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = os.WriteFile(mark+".started", nil, 0o644)
			<-ctx.Done()
			_ = os.WriteFile(mark+".cancelled", nil, 0o644)
			return nil, ctx.Err()
		})
	meet := make(chan struct{}) // calls of tick with meet pair up here
	s.AddTool(&mcp.Tool{Name: "tick", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Label string
				Meet  bool
			}
			_ = json.Unmarshal(req.Params.Arguments, &args)
			if args.Meet { // both calls are in flight before either reports
				select {
				case meet <- struct{}{}:
				case <-meet:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			if tok := req.Params.GetProgressToken(); tok != nil {
				for i := 1; i <= 3; i++ {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: 3, Message: args.Label})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ticked"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "say", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "said"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "trace", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			meta := req.Params.GetMeta()
			got := fmt.Sprintf("traceparent=%v tracestate=%v", meta["traceparent"], meta["tracestate"])
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: got}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "confirm", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Sure?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"username": map[string]any{"type": "string"}}}})
			if err != nil {
				return nil, err
			}
			got := fmt.Sprintf("action=%s content=%v", res.Action, res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: got}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "tickconfirm", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "asking"})
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Sure?", RequestedSchema: map[string]any{"type": "object"}})
			if err != nil {
				return nil, err
			}
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 2, Total: 2, Message: "answered"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "action=" + res.Action}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "boom", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: -32001, Message: "boom: the tool broke"}
		})
	return s
}

// fastProtocol is the protocol version the fast path serves.
const fastProtocol = "2025-11-25"

// connectOn is connect with a client on protocol version.
func connectOn(t testing.TB, transport mcp.Transport, n *notes, version string) *mcp.ClientSession {
	t.Helper()
	if n == nil {
		n = newNotes()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1.0"}, n.options())
	cs, err := c.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err, "connect")
	require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// fastRig is a rig whose gateway has the fast path as setting says,
// serving the fast path's test server as "demo", which hides its tool
// sleep.
func fastRig(t *testing.T, setting, mark string) *rig {
	t.Helper()
	spec := selfServer(t, "fastpath", map[string]string{markEnv: mark})
	spec.Expose = expose.Rules{Hide: []string{"sleep"}}
	r := newRigWith(t, map[string]manager.Spec{"demo": spec}, gateway.Options{FastPath: setting}, gateway.HTTPOptions{})
	r.wait("demo")
	return r
}

// outcome is what a client makes of a call, for comparing two paths.
func outcome(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "error: " + err.Error()
	}
	b, err := json.Marshal(res)
	require.NoError(t, err)
	return string(b)
}

// A call the fast path answers is answered as the go-sdk path answers
// it: plain and structured results, a tool's isError result, arguments
// the schema refuses, a JSON-RPC error from the server; an unknown or
// hidden tool is refused alike (and left to the go-sdk path).
func TestFastPathAnswersAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	on := fastRig(t, "on", t.TempDir()+"/m")
	off := fastRig(t, "off", t.TempDir()+"/m")
	calls := []fastCall{
		{"echo", map[string]any{"text": "héllo\nworld"}, true},
		{"add", map[string]any{"a": 2, "b": 40}, true},
		{"fail", map[string]any{"message": "no luck"}, true},
		{"echo", map[string]any{"text": 5}, true}, // refused by the schema
		{"boom", map[string]any{}, true},
		{"echo", "not an object", false}, // refused in the go-sdk path's words
		{"nope", map[string]any{}, false},
		{"sleep", map[string]any{"ms": 1}, false}, // hidden
	}
	requireAnsweredAlike(t, on, off, calls)
}

// fastCall is a call made on a rig with the fast path on and on one with
// it off, and whether the fast path answers it.
type fastCall struct {
	tool string
	args any
	fast bool
}

// requireAnsweredAlike makes each call through a server's endpoint and
// through /mcp, on both rigs, and requires the same outcome from each,
// answered by the fast path exactly where the call says so.
func requireAnsweredAlike(t *testing.T, on, off *rig, calls []fastCall) {
	t.Helper()
	requireAnsweredAlikeOn(t, on, off, calls, fastProtocol)
}

// requireAnsweredAlikeOn is requireAnsweredAlike with clients on protocol
// version.
func requireAnsweredAlikeOn(t *testing.T, on, off *rig, calls []fastCall, version string) {
	t.Helper()
	for _, ep := range []struct{ path, prefix string }{{"/servers/demo/mcp", ""}, {"/mcp", "demo__"}} {
		csOn := connectOn(t, on.streamable(ep.path), nil, version)
		csOff := connectOn(t, off.streamable(ep.path), nil, version)
		pollUntil(t, 10*time.Second, "both gateways list the tools", func() bool {
			return slices.Contains(toolNames(t, csOn), ep.prefix+"boom") && slices.Contains(toolNames(t, csOff), ep.prefix+"boom")
		})
		for _, c := range calls {
			before := gateway.FastServed(on.gw)
			got := outcome(t, csOn, ep.prefix+c.tool, c.args)
			want := outcome(t, csOff, ep.prefix+c.tool, c.args)
			require.Equal(t, want, got, "%s %s", ep.path, c.tool)
			served := gateway.FastServed(on.gw) - before
			if c.fast {
				require.EqualValues(t, 1, served, "%s %s: answered by the fast path", ep.path, c.tool)
			} else {
				require.Zero(t, served, "%s %s: left to the go-sdk path", ep.path, c.tool)
			}
		}
	}
	require.Zero(t, gateway.FastServed(off.gw), "with the fast path off, none is")
}

// fastSession initializes a session on path by hand and returns the
// headers its requests carry.
func fastSession(t *testing.T, r *rig, path string) map[string]string {
	t.Helper()
	code, body, hdr := post(t, r.base+path, initializeBody, nil)
	require.Equal(t, http.StatusOK, code, body)
	session := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-06-18"}
	code, body, _ = post(t, r.base+path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	require.Less(t, code, 300, body)
	return session
}

// postCtx is post with its own context.
func postCtx(ctx context.Context, url, body string, header map[string]string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// A fast call ends upstream (the server is sent notifications/cancelled)
// when its client leaves (the POST ends) or cancels it.
func TestFastPathCancellationReachesTheServer(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"client leaves", "client cancels"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			mark := t.TempDir() + "/block"
			r := fastRig(t, "on", mark)
			session := fastSession(t, r, "/servers/demo/mcp")
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			answered := make(chan string, 1)
			go func() {
				_, body, _ := postCtx(ctx, r.base+"/servers/demo/mcp", `{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{"name":"block","arguments":{}}}`, session)
				answered <- body
			}()
			pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })
			if how == "client leaves" {
				leave()
			} else {
				code, body, _ := post(t, r.base+"/servers/demo/mcp", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-7","reason":"changed my mind"}}`, session)
				require.Equal(t, http.StatusAccepted, code, body)
			}
			pollUntil(t, 10*time.Second, "the server's request cancelled", func() bool { return exists(mark + ".cancelled") })
			select {
			case body := <-answered:
				if how == "client cancels" {
					require.Contains(t, body, `"id":"c-7"`)
					require.Contains(t, body, `"isError":true`)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled call's POST was never answered")
			}
			require.EqualValues(t, 1, gateway.FastServed(r.gw))
			stillServes(t, r)
		})
	}
}

// A server that dies under a fast call gives the client an error result
// saying the call was cut off, at once rather than at the call's timeout,
// and the server is reconnected for the next call.
func TestFastPathServerCrashMidCall(t *testing.T) {
	t.Parallel()
	mark := t.TempDir() + "/block"
	r := fastRig(t, "on", mark)
	cs := connectOn(t, r.streamable("/servers/demo/mcp"), nil, fastProtocol)
	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
		if err != nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}
		}
		got <- res
	}()
	pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })
	st, err := r.m.Status("demo")
	require.NoError(t, err)
	require.NotZero(t, st.PID)
	server, err := os.FindProcess(st.PID)
	require.NoError(t, err)
	require.NoError(t, server.Kill())
	select {
	case res := <-got:
		require.True(t, res.IsError, text(res))
		require.True(t, strings.HasPrefix(text(res), string(manager.CodeInvocationFailed)+": "), text(res))
		require.Contains(t, text(res), `server "demo"`)
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not answered when its server died")
	}
	require.EqualValues(t, 1, gateway.FastServed(r.gw))
	pollUntil(t, 30*time.Second, "a new server process connected", func() bool {
		now, err := r.m.Status("demo")
		return err == nil && now.State == manager.StateConnected && now.PID != st.PID
	})
	res := call(t, cs, "echo", map[string]any{"text": "back"})
	require.Equal(t, "back", text(res))
}

// With the fast path on the gateway times idle HTTP sessions out itself
// (the go-sdk never sees the fast calls): a call that outlasts the
// session timeout is answered, its session kept, as on the go-sdk path.
func TestFastPathCallOutlastingTheSessionTimeout(t *testing.T) {
	t.Parallel()
	spec := selfServer(t, "fastpath", map[string]string{markEnv: t.TempDir() + "/m"})
	r := newRigWith(t, map[string]manager.Spec{"demo": spec}, gateway.Options{FastPath: "on"}, gateway.HTTPOptions{SessionTimeout: 200 * time.Millisecond})
	r.wait("demo")
	session := fastSession(t, r, "/servers/demo/mcp")
	code, body, _ := post(t, r.base+"/servers/demo/mcp", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":1000}}}`, session)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"id":5,"result":{`, body)
	require.Contains(t, body, "slept 1000ms", body)
	require.EqualValues(t, 1, gateway.FastServed(r.gw))
}

// A client that set a logging level hears what the server logs during
// its call, and the fast path answers its calls as it does those of a
// client that set none (the order and the bytes are fastlogs_test.go's
// concern).
func TestFastPathServesLoggingClients(t *testing.T) {
	t.Parallel()
	r := fastRig(t, "on", t.TempDir()+"/m")
	logs := make(chan any, 16)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "1.0"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) { logs <- req.Params.Data },
	})
	cs, err := c.Connect(ctx, r.streamable("/servers/demo/mcp"), &mcp.ClientSessionOptions{ProtocolVersion: fastProtocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	res := call(t, cs, "say", map[string]any{})
	require.Equal(t, "done", text(res))
	require.Equal(t, int64(1), gateway.FastServed(r.gw), "without a logging level, the fast path answers")
	require.NoError(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
	for len(logs) > 0 {
		<-logs
	}
	res = call(t, cs, "say", map[string]any{})
	require.Equal(t, "done", text(res))
	require.Equal(t, int64(2), gateway.FastServed(r.gw), "with a logging level, the fast path answers")
	select {
	case got := <-logs:
		require.Equal(t, "said", got)
	case <-time.After(10 * time.Second):
		t.Fatal("the server's log message never reached the client")
	}
}

// The trace context a client sends in a call's _meta reaches the server
// the same way with the fast path on as off: when mcpvisor records
// traces, as the context of its mcp.tool_call span, a child of the
// client's; when it records none, as the client sent it.
func TestFastPathPassesTheTraceContextAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, recording := range []bool{true, false} {
		for _, setting := range []string{"on", "off"} {
			t.Run(fmt.Sprintf("recording %v, fast path %s", recording, setting), func(t *testing.T) {
				t.Parallel()
				var mOpts manager.Options
				sr := tracetest.NewSpanRecorder()
				if recording {
					tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
					t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
					mOpts.TracerProvider = tp
				}
				spec := selfServer(t, "fastpath", map[string]string{markEnv: t.TempDir() + "/m"})
				r := newRigOn(t, mOpts, map[string]manager.Spec{"demo": spec}, gateway.Options{FastPath: setting}, gateway.HTTPOptions{})
				r.wait("demo")
				cs := connectOn(t, r.streamable("/servers/demo/mcp"), nil, fastProtocol)
				params := &mcp.CallToolParams{Name: "trace", Arguments: map[string]any{}, Meta: mcp.Meta{
					"traceparent": "00-" + traceID + "-" + clientSpan + "-01", "tracestate": "vendor=x"}}
				res, err := cs.CallTool(context.Background(), params)
				require.NoError(t, err)
				want := "traceparent=00-" + traceID + "-" + clientSpan + "-01 tracestate=vendor=x"
				if recording {
					var calls []sdktrace.ReadOnlySpan
					for _, s := range sr.Ended() {
						if s.Name() == "mcp.tool_call" {
							calls = append(calls, s)
						}
					}
					require.Len(t, calls, 1)
					require.Equal(t, clientSpan, calls[0].Parent().SpanID().String(), "mcpvisor's span is the client's child")
					want = "traceparent=00-" + traceID + "-" + calls[0].SpanContext().SpanID().String() + "-01 tracestate=vendor=x"
				}
				require.Equal(t, want, text(res))
				if setting == "on" {
					require.EqualValues(t, 1, gateway.FastServed(r.gw))
				}
			})
		}
	}
}
