package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// At the cap on sessions a new client is refused with an error that says
// so, the open sessions go on working (none is closed to make room), and
// once one ends a new client gets in.
func TestSessionCap(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, map[string]manager.Spec{"demo": selfServer(t, "demo", nil)}, gateway.Options{MaxSessions: 2}, gateway.HTTPOptions{})
	r.wait("demo")
	a := connect(t, r.streamable("/mcp"), nil)
	b := connect(t, &mcp.SSEClientTransport{Endpoint: r.base + "/sse"}, nil)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "third", Version: "1"}, nil)
	_, err := c.Connect(ctx, r.streamable("/mcp"), legacy)
	require.Error(t, err, "a third session was opened beyond the cap of 2")
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "want a JSON-RPC error, got %v", err)
	assert.Equal(t, gateway.CodeRefused, rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "--max-sessions")

	for _, cs := range []*mcp.ClientSession{a, b} {
		require.Equal(t, "still here", text(call(t, cs, "demo__echo", map[string]any{"text": "still here"})))
	}
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool {
		cs, err := c.Connect(ctx, r.streamable("/mcp"), legacy)
		if err == nil {
			_ = cs.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "no room made by a session that ended")
}

// A body that trickles in slower than the body timeout allows is cut off;
// the connection does not stay held.
func TestDrippedBodyIsCut(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, gateway.HTTPOptions{BodyTimeout: 200 * time.Millisecond})
	conn := dialRaw(t, r)
	_, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	require.NoError(t, err)
	// Nothing more is sent: a client that waits (far longer than the
	// body timeout) for the server to give up.
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	got, err := io.ReadAll(conn)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the dripped body was waited for: %q", got)
}

// A kept-alive connection that sends nothing more is closed after the
// idle timeout.
func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, gateway.HTTPOptions{IdleTimeout: 200 * time.Millisecond})
	conn := dialRaw(t, r)
	br := bufio.NewReader(conn)
	_, err := fmt.Fprintf(conn, "GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "an idle kept-alive connection was kept")
}

// Connections are capped, and those on which no request has passed the
// checks more tightly: beyond a cap a connection is answered 503 and
// closed, and one that authenticates makes room among the others. A
// wrong token closes its connection: each guess costs a new one.
func TestConnectionCaps(t *testing.T) {
	t.Parallel()
	tok := strings.Repeat("cd", 32)
	r := newRig(t, nil, gateway.HTTPOptions{Token: tok, MaxConns: 4, MaxUnauthConns: 2})
	guess := dialRaw(t, r)
	br := requireServed(t, guess, "Bearer wrong", http.StatusUnauthorized)
	_, err := br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the connection of a wrong token stays open")

	a, b := dialRaw(t, r), dialRaw(t, r)
	requireRefused(t, dialRaw(t, r), "a third unauthenticated connection")
	requireServed(t, a, "Bearer "+tok, http.StatusNotFound)
	c := dialRaw(t, r) // in a's place among the unauthenticated
	requireRefused(t, dialRaw(t, r), "a third unauthenticated connection, beside an authenticated one")
	requireServed(t, c, "Bearer "+tok, http.StatusNotFound)
	d := dialRaw(t, r)
	requireServed(t, d, "Bearer "+tok, http.StatusNotFound)
	// a, c and d authenticated, b not: 4 open, the most there may be.
	requireRefused(t, dialRaw(t, r), "a fifth connection")
	_ = b
}

// dialRaw opens a TCP connection to r, closed when the test ends.
func dialRaw(t *testing.T, r *rig) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.base, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// requireRefused asserts that conn is answered 503 without having sent
// anything.
func requireRefused(t *testing.T, conn net.Conn, what string) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "%s: not refused", what)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, what)
}

// requireServed sends a request on conn with the Authorization header auth
// and asserts its status; it returns the connection's reader.
func requireServed(t *testing.T, conn net.Conn, auth string, want int) *bufio.Reader {
	t.Helper()
	_, err := fmt.Fprintf(conn, "GET /servers/nosuch/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: %s\r\n\r\n", auth)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, want, resp.StatusCode)
	return br
}

// A token that guards an address other than loopback must resist
// guessing: blank, short, worded or repetitive tokens are refused with a
// way to make a good one; random ones of 32 bytes pass. Loopback takes
// any token.
func TestTokenStrength(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		token string
		weak  bool
	}{
		{" ", true},
		{"a", true},
		{"s3cret-password", true},
		{"123e4567-e89b-12d3-a456-426614174000", true}, // a UUID: 122 bits
		{strings.Repeat("a", 64), true},
		{strings.Repeat("0123", 16), true},
		{"correct horse battery staple correct horse battery staple", true},
		{"3f9c1a7e5b2d8f4a6c0e9b1d7a3f5c8e2b6d4f0a9c7e1b3d5f8a2c4e6b0d9f1a", false}, // openssl rand -hex 32
		{"q2Xx7PYl0cV8h3FtKJwZbR9sNe6uMa1GdTiO4kLyUE0=", false},                     // openssl rand -base64 32
	} {
		err := gateway.CheckAddr("0.0.0.0:8931", tt.token)
		var weak *gateway.WeakTokenError
		if !tt.weak {
			assert.NoError(t, err, "token %q", tt.token)
			continue
		}
		if assert.True(t, errors.As(err, &weak), "token %q: %v", tt.token, err) {
			assert.Less(t, weak.Bits, gateway.MinTokenBits)
			assert.Contains(t, err.Error(), "openssl rand -hex 32", "the error says how to make a good token")
		}
		assert.NoError(t, gateway.CheckAddr("127.0.0.1:8931", tt.token), "loopback takes any token")
	}
	var none *gateway.TokenError
	require.True(t, errors.As(gateway.CheckAddr("0.0.0.0:8931", ""), &none))
}
