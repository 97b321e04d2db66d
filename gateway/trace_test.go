package gateway

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// A client's W3C trace context, sent in a call's _meta, is the context the
// call reaches the manager with: mcpvisor's span, and the upstream call
// after it, join the client's trace.
func TestTraceContextContinues(t *testing.T) {
	src := newFakeSource(t)
	src.set("git", stdio, "status")
	g := newGateway(t, src)
	c := connect(t, g, everything, "")
	c.eventually(t, "git__status")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	params := &mcp.CallToolParams{Name: "git__status", Meta: mcp.Meta{
		"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}}
	_, err := c.CallTool(context.Background(), params)
	require.NoError(t, err)
	src.mu.Lock()
	got := src.lastTrace
	src.mu.Unlock()
	require.True(t, got.IsRemote(), "no remote span context reached the call")
	require.Equal(t, traceID, got.TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", got.SpanID().String())
}
