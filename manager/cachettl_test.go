package manager_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// The time to live a server gives its lists is kept by kind, from its
// latest list of that kind: the smallest of a list's pages, zero where it
// gave none, and a re-list replaces it.
func TestStatusKeepsListCacheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var toolsTTL atomic.Int64
		toolsTTL.Store(5000)
		f := newFakeServer(&mcp.ServerOptions{PageSize: 2,
			SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
				switch r := req.(type) {
				case *mcp.ListToolsRequest:
					c.TTLMs = int(toolsTTL.Load())
					if r.Params != nil && r.Params.Cursor != "" {
						c.TTLMs -= 1000 // later pages live shorter
					}
				case *mcp.ListResourcesRequest:
					c.TTLMs = 7000
				}
			}})
		f.addEcho("a", "b", "c")
		f.addResources("fake://r1")
		f.addPrompts("p1")
		m := newManager(t, manager.Options{Dial: fleet{"x": f.serve()}.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)
		require.Equal(t, manager.CacheTTL{Tools: 4 * time.Second, Resources: 7 * time.Second},
			mustStatus(t, m, "x").CacheTTL, "tools: the smaller of two pages; prompts and templates: no hint")

		toolsTTL.Store(0)
		f.addEcho("d")
		tl.until("x", events.KindToolsChanged, time.Second)
		require.Equal(t, manager.CacheTTL{Resources: 7 * time.Second}, mustStatus(t, m, "x").CacheTTL,
			"the re-listed tools gave no hint; the resources keep theirs")
	})
}

// A server whose list pages lead back to a page already read fails its
// discovery with an error that says so, instead of being listed forever.
func TestListCursorLoopIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("a")
		f.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if lt, ok := req.(*mcp.ListToolsRequest); ok && lt.Params != nil {
					lt.Params.Cursor = "" // every page is the first, again
				}
				res, err := next(ctx, method, req)
				if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					lt.NextCursor = "again"
				}
				return res, err
			}
		})
		m := newManager(t, manager.Options{Dial: fleet{"x": f.serve()}.dial})
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"max_retries": 0})))
		st, err := m.Wait(context.Background(), "x", manager.StateFailed)
		require.NoError(t, err)
		require.Contains(t, st.LastError, `tools/list: the server gave the cursor "again" a second time: its list would never end`)
	})
}
