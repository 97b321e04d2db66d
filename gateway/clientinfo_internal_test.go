package gateway

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// The list of clients says how each is offered its tools, once it has
// listed them, and how many of its calls are in flight.
func TestClientsSayModeAndCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(t)
		src.set("op", stdio, "wait")
		release := make(chan struct{})
		src.answerWith(func(ctx context.Context, name string, _ manager.CallOptions) (*mcp.CallToolResult, error) {
			<-release
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
		g := newGateway(t, src)
		c := &httpClient{t: t, h: g.Handler(HTTPOptions{})}
		c.open()
		synctest.Wait()
		require.Len(t, g.Clients(), 1)
		require.Empty(t, g.Clients()[0].Mode, "no mode before the client lists its tools")

		rec := c.send(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil)
		require.Contains(t, rec.Body.String(), "op__wait")
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			c.send(http.MethodPost, callBody(3, "op__wait"), nil)
		}()
		synctest.Wait()
		got := g.Clients()
		require.Len(t, got, 1)
		require.Equal(t, ModeDirect, got[0].Mode)
		require.Equal(t, 1, got[0].InFlight)
		require.Empty(t, got[0].Toolset)

		close(release)
		<-answered
		synctest.Wait()
		require.Zero(t, g.Clients()[0].InFlight)
	})
}
