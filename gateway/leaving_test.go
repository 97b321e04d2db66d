package gateway_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A client that ends its session with DELETE while a call is in flight is
// answered at once, the server's request is cancelled, and the call's own
// request gets a JSON-RPC error rather than an empty answer.
func TestDeleteMidCallCancelsUpstream(t *testing.T) {
	t.Parallel()
	mark := t.TempDir() + "/block"
	r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", map[string]string{markEnv: mark})}, gateway.HTTPOptions{})
	r.wait("demo")
	code, body, hdr := post(t, r.base+"/mcp", initializeBody, nil)
	require.Equal(t, http.StatusOK, code, body)
	session := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-06-18"}
	code, body, _ = post(t, r.base+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	require.Less(t, code, 300, body)

	type answer struct {
		code int
		body string
	}
	answered := make(chan answer, 1)
	go func() {
		code, body, _ := post(t, r.base+"/mcp", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"demo__block","arguments":{}}}`, session)
		answered <- answer{code, body}
	}()
	pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })

	// The call's own timeout (30 s) is far off: an answer within 10 s is
	// one that did not wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, r.base+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", session["Mcp-Session-Id"])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err, "DELETE while a call is in flight")
	resp.Body.Close()
	assert.Less(t, resp.StatusCode, 300)

	pollUntil(t, 10*time.Second, "the server's request cancelled", func() bool { return exists(mark + ".cancelled") })
	select {
	case a := <-answered:
		assert.Equal(t, http.StatusOK, a.code)
		assert.Contains(t, a.body, `"error":{"code":-32000`, "the deleted session's call is answered with a JSON-RPC error")
		assert.Contains(t, a.body, "DELETE")
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight was never answered after its session was deleted")
	}
	stillServes(t, r)
}

// A client that disappears mid-call (its connections closed, nothing
// said) has its call cancelled upstream, over streamable HTTP and SSE.
func TestClientGoneMidCallCancelsUpstream(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"streamable HTTP", "SSE"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			mark := t.TempDir() + "/block"
			r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", map[string]string{markEnv: mark})}, gateway.HTTPOptions{})
			r.wait("demo")
			var conns killer
			hc := &http.Client{Transport: &http.Transport{DialContext: conns.dial}}
			var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: r.base + "/mcp", HTTPClient: hc, MaxRetries: -1}
			if transport == "SSE" {
				tr = &mcp.SSEClientTransport{Endpoint: r.base + "/sse", HTTPClient: hc}
			}
			cs := connect(t, tr, nil)
			returned := make(chan struct{})
			go func() {
				defer close(returned)
				_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "demo__block", Arguments: map[string]any{}})
			}()
			pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })
			conns.kill()
			pollUntil(t, 10*time.Second, "the server's request cancelled", func() bool { return exists(mark + ".cancelled") })
			_ = cs.Close()
			<-returned
			stillServes(t, r)
		})
	}
}

// killer dials connections and closes them all at once, as a client
// process that dies does.
type killer struct {
	mu sync.Mutex
	// mu guards conns.
	conns []net.Conn
}

func (k *killer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		k.mu.Lock()
		k.conns = append(k.conns, c)
		k.mu.Unlock()
	}
	return c, err
}

func (k *killer) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, c := range k.conns {
		_ = c.Close()
	}
}

// An unknown server or toolset is answered 404 with the names there are
// only to a request that passed every check: one with a foreign Host (a
// page using DNS rebinding) or without the token learns nothing.
func TestUnknownEndpointNamesNothingToStrangers(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", nil)}, gateway.HTTPOptions{})
	r.wait("demo")
	for _, path := range []string{"/servers/nosuch/mcp", "/toolsets/nosuch/mcp", "/servers/nosuch/sse"} {
		code, body, _ := post(t, r.base+path, initializeBody, map[string]string{"Host": "evil.example:80"})
		assert.Equal(t, http.StatusForbidden, code, "%s with a foreign Host: %s", path, body)
		assert.NotContains(t, body, "demo", "%s with a foreign Host names a server", path)
	}
	code, body, _ := post(t, r.base+"/servers/nosuch/mcp", initializeBody, nil)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "declared: demo", "a local client is told what there is")

	tok := strings.Repeat("ab", 32)
	rt := newRig(t, map[string]manager.Spec{"demo": selfServer(t, "demo", nil)}, gateway.HTTPOptions{Token: tok})
	rt.wait("demo")
	code, body, _ = post(t, rt.base+"/servers/nosuch/mcp", initializeBody, nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.NotContains(t, body, "demo", "a request without the token names a server")
	code, body, _ = post(t, rt.base+"/servers/nosuch/mcp", initializeBody, map[string]string{"Authorization": "Bearer " + tok})
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "declared: demo")
}
