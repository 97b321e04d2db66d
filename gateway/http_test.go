package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// post sends body to url as a client of the streamable transport would,
// with extra headers (a "Host" one replaces the request's host), and
// returns the status and body.
func post(t testing.TB, url, body string, header map[string]string) (int, string, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if h, ok := header["Host"]; ok {
		req.Host = h
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "POST %s", url)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}

// stillServes asserts that a new client can still list and call.
func stillServes(t testing.TB, r *rig) {
	t.Helper()
	cs := connect(t, r.streamable("/mcp"), nil)
	res := call(t, cs, "demo__echo", map[string]any{"text": "still here"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, "still here", text(res))
	require.NoError(t, cs.Close())
}

// With a token set, a request without it or with another one is refused
// with 401 and a client that sends it is served.
func TestBearerToken(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", nil)}, gateway.HTTPOptions{Token: "s3cret"})
	r.wait("demo")
	for _, path := range []string{"/mcp", "/servers/demo/mcp", "/sse"} {
		code, _, _ := post(t, r.base+path, initializeBody, nil)
		assert.Equal(t, http.StatusUnauthorized, code, "%s without a token", path)
		code, _, _ = post(t, r.base+path, initializeBody, map[string]string{"Authorization": "Bearer wrong"})
		assert.Equal(t, http.StatusUnauthorized, code, "%s with a wrong token", path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "no-token", Version: "1"}, nil)
	_, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.base + "/mcp", MaxRetries: -1}, legacy)
	require.Error(t, err, "a client without the token connected")

	hc := &http.Client{Transport: bearer{"s3cret", http.DefaultTransport}}
	cs := connect(t, &mcp.StreamableClientTransport{Endpoint: r.base + "/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	res := call(t, cs, "demo__echo", map[string]any{"text": "with token"})
	require.Equal(t, "with token", text(res))
	sse := connect(t, &mcp.SSEClientTransport{Endpoint: r.base + "/sse", HTTPClient: hc}, nil)
	res = call(t, sse, "demo__echo", map[string]any{"text": "sse with token"})
	require.Equal(t, "sse with token", text(res))
}

// A page of a foreign site cannot use the gateway through a visitor's
// browser: its Origin is refused with 403. Local pages are served.
func TestForeignOriginRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, gateway.HTTPOptions{})
	for _, origin := range []string{"https://evil.example", "http://attacker.test:8080", "null"} {
		for _, path := range []string{"/mcp", "/sse"} {
			code, body, _ := post(t, r.base+path, initializeBody, map[string]string{"Origin": origin})
			assert.Equal(t, http.StatusForbidden, code, "Origin %s on %s: %s", origin, path, body)
		}
	}
	for _, origin := range []string{"http://localhost:3000", "http://127.0.0.1:5173"} {
		code, body, _ := post(t, r.base+"/mcp", initializeBody, map[string]string{"Origin": origin})
		assert.Equal(t, http.StatusOK, code, "Origin %s: %s", origin, body)
	}
}

// A foreign site whose name is made to resolve to 127.0.0.1 (DNS
// rebinding) is, to the browser, the gateway's own origin, so no origin
// check stops its page; the Host it sends does: 403 for any Host that is not
// loopback, on the MCP endpoints and the control API alike. A loopback Host
// is served.
func TestRebindingHostRefused(t *testing.T) {
	t.Parallel()
	control := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{}") })
	r := newRig(t, nil, gateway.HTTPOptions{Control: control})
	_, port, err := net.SplitHostPort(strings.TrimPrefix(r.base, "http://"))
	require.NoError(t, err)
	rebound := "rebound.example:" + port
	for _, path := range []string{"/mcp", "/sse", "/control/v1/servers/x/disable"} {
		code, body, _ := post(t, r.base+path, initializeBody,
			map[string]string{"Host": rebound, "Origin": "http://" + rebound, "Sec-Fetch-Site": "same-origin"})
		assert.Equal(t, http.StatusForbidden, code, "Host %s on %s: %s", rebound, path, body)
	}
	for _, path := range []string{"/mcp", "/control/v1/servers/x/disable"} {
		code, body, _ := post(t, r.base+path, initializeBody, map[string]string{"Host": "localhost:" + port})
		assert.Equal(t, http.StatusOK, code, "%s: %s", path, body)
	}
}

// Garbage, an oversized body and an unknown method each get an HTTP error
// or a JSON-RPC error, never a hang or a crash, and the gateway goes on
// serving.
func TestBadRequestsKeepServing(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", nil)}, gateway.HTTPOptions{})
	r.wait("demo")

	code, body, hdr := post(t, r.base+"/mcp", initializeBody, nil)
	require.Equal(t, http.StatusOK, code, body)
	session := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-06-18"}
	require.NotEmpty(t, session["Mcp-Session-Id"])
	code, body, _ = post(t, r.base+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	require.Less(t, code, 300, body)

	rpcOrHTTPError := func(what string, code int, body string) {
		t.Helper()
		if code < 400 {
			assert.Contains(t, body, `"error"`, "%s: status %d with no JSON-RPC error: %s", what, code, body)
		}
	}
	for _, garbage := range []string{"not json at all", `{"jsonrpc":"2.0","id":`, `[1,2,3]`, `{"id":7}`, "\x00\xff\xfe"} {
		code, body, _ = post(t, r.base+"/mcp", garbage, session)
		rpcOrHTTPError(fmt.Sprintf("garbage %q", garbage), code, body)
		code, body, _ = post(t, r.base+"/mcp", garbage, nil) // outside any session
		rpcOrHTTPError(fmt.Sprintf("garbage %q without a session", garbage), code, body)
	}

	huge := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo__echo","arguments":{"text":"` +
		strings.Repeat("x", gateway.DefaultMaxBodyBytes+1) + `"}}}`
	code, body, _ = post(t, r.base+"/mcp", huge, session)
	require.GreaterOrEqual(t, code, 400, "a body over the limit was accepted: %.200s", body)

	code, body, _ = post(t, r.base+"/mcp", `{"jsonrpc":"2.0","id":4,"method":"no/such/method","params":{}}`, session)
	if code < 400 {
		require.Contains(t, body, `"code":-32601`, "an unknown method is method-not-found")
	}

	// The session itself survived all of that.
	code, body, _ = post(t, r.base+"/mcp", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"demo__echo","arguments":{"text":"ok"}}}`, session)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"text":"ok"`)

	stillServes(t, r)
}

// A thousand clients that connect and go away at once leave the gateway
// serving, every session ended and no goroutine behind. (Not parallel: it
// counts the process's goroutines, and parallel tests start only after
// it.)
func TestManySessions(t *testing.T) {
	const sessions, workers = 1000, 32
	r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", nil)}, gateway.HTTPOptions{})
	r.wait("demo")
	stillServes(t, r) // the endpoint exists before the baseline is taken
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	hc := &http.Client{Transport: tr}
	before := goleak.IgnoreCurrent()
	log := watchEvents(t, r.m)

	var wg sync.WaitGroup
	var failed atomic.Int64
	var firstErr atomic.Value
	work := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range work {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				c := mcp.NewClient(&mcp.Implementation{Name: "many", Version: fmt.Sprint(i)}, nil)
				cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.base + "/mcp", HTTPClient: hc, MaxRetries: -1}, legacy)
				if err == nil {
					err = cs.Close()
				}
				cancel()
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	for i := range sessions {
		work <- i
	}
	close(work)
	wg.Wait()
	require.Zero(t, failed.Load(), "sessions that failed (first: %v)", firstErr.Load())

	// Every session that announced itself also says goodbye. (One that
	// ended before its initialized notification was handled is never
	// listed, and so never announced.)
	pollUntil(t, 30*time.Second, "no client listed", func() bool { return len(r.gw.Clients()) == 0 })
	tr.CloseIdleConnections()
	goleak.VerifyNone(t, before) // the sessions' watchers too, so every event is out
	connected, disconnected := map[string]bool{}, map[string]bool{}
	for {
		e, ok, err := log.sub.TryRecv()
		require.NoError(t, err)
		if !ok {
			break
		}
		switch e.Kind {
		case events.KindClientConnected:
			connected[e.Text("client")] = true
		case events.KindClientDisconnected:
			disconnected[e.Text("client")] = true
		case events.KindLagged:
			t.Fatalf("events missed: %v", e.Fields)
		}
	}
	require.NotEmpty(t, connected)
	require.Equal(t, connected, disconnected, "clients that connected and never left, or left and never came")
	stillServes(t, r)
}

// Client sessions are announced with client_connected and
// client_disconnected, and their calls' tool_call events name them.
func TestClientEvents(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", nil)}, gateway.HTTPOptions{})
	r.wait("demo")
	for _, transport := range []string{"stdio", "http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			log := watchEvents(t, r.m)
			var tr mcp.Transport
			switch transport {
			case "stdio":
				tr = r.stdio(t, "")
			case "sse":
				tr = &mcp.SSEClientTransport{Endpoint: r.base + "/sse"}
			default:
				tr = r.streamable("/mcp")
			}
			cs := connect(t, tr, nil)
			e := log.next(t, events.KindClientConnected, 10*time.Second, nil)
			label := e.Text("client")
			assert.True(t, strings.HasPrefix(label, "gateway-test/1.0"), "client %q", label)
			assert.Equal(t, "gateway-test", e.Text("client_name"))
			assert.Equal(t, "1.0", e.Text("client_version"))
			assert.Equal(t, transport, e.Text("transport"))
			assert.Equal(t, "/mcp", e.Text("endpoint"), "the endpoint serving everything")
			switch transport {
			case "http":
				assert.Regexp(t, `\([0-9A-Z]{16}\)$`, label, "an HTTP client's label has a digest of its session id")
				assert.NotContains(t, label, cs.ID(), "the session id lets whoever reads it act as the client: never shown")
			case "sse":
				assert.Regexp(t, `\([0-9A-Z]{16}\)$`, label, "an SSE client's label has an id made up for it")
			case "stdio":
				assert.Regexp(t, `\(stdio(-[0-9]+)?\)$`, label, "a stdio client's label")
			}

			call(t, cs, "demo__echo", map[string]any{"text": "x"})
			e = log.next(t, events.KindToolCall, 10*time.Second, func(e events.Event) bool { return e.Server == "demo" })
			assert.Equal(t, "echo", e.Text("tool"))
			assert.Equal(t, label, e.Text("client"), "the tool_call names its client")

			require.NoError(t, cs.Close())
			e = log.next(t, events.KindClientDisconnected, 10*time.Second, nil)
			assert.Equal(t, label, e.Text("client"))
			assert.Equal(t, transport, e.Text("transport"))
		})
	}
}

// A client that cancels its call gets control back at once, and the
// server's request is cancelled too.
func TestCancelReachesServer(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "streamable HTTP", "SSE"} {
		t.Run(transport, func(t *testing.T) {
			mark := t.TempDir() + "/block"
			r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", map[string]string{markEnv: mark})}, gateway.HTTPOptions{})
			r.wait("demo")
			var tr mcp.Transport
			switch transport {
			case "stdio":
				tr = r.stdio(t, "")
			case "SSE":
				tr = &mcp.SSEClientTransport{Endpoint: r.base + "/sse"}
			default:
				tr = r.streamable("/mcp")
			}
			cs := connect(t, tr, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "demo__block", Arguments: map[string]any{}})
				got <- err
			}()
			pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })
			cancel()
			select {
			case err := <-got:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(10 * time.Second):
				t.Fatal("the cancelled call did not return")
			}
			pollUntil(t, 10*time.Second, "the server's request cancelled", func() bool { return exists(mark + ".cancelled") })
			res := call(t, cs, "demo__echo", map[string]any{"text": "next"})
			require.Equal(t, "next", text(res))
		})
	}
}

// Removing a server while a client is connected tells the client with
// tools/list_changed; its tools leave the list and calling one fails.
func TestRemovedServerLeavesList(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"stay": selfServer(t, "demo", nil), "gone": selfServer(t, "demo", nil)}, gateway.HTTPOptions{})
	r.wait("stay")
	r.wait("gone")
	n := newNotes()
	cs := connect(t, r.streamable("/mcp"), n)
	require.Contains(t, toolNames(t, cs), "gone__echo")
	for len(n.changed) > 0 {
		<-n.changed
	}
	_, err := r.m.Remove("gone")
	require.NoError(t, err)
	select {
	case <-n.changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after a server was removed")
	}
	pollUntil(t, 5*time.Second, "gone's tools off the list", func() bool {
		names := toolNames(t, cs)
		return !containsPrefix(names, "gone__") && containsPrefix(names, "stay__")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "gone__echo", Arguments: map[string]any{"text": "x"}})
	if err == nil {
		require.True(t, res.IsError, "a removed server's tool still answers: %s", text(res))
	}
}

func containsPrefix(names []string, prefix string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, prefix) })
}
