package manager_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// subscribable is an in-process server with one resource that counts the
// subscriptions it was asked for.
func subscribable(t *testing.T) (srv *mcp.Server, subscribed, unsubscribed *atomic.Int32) {
	subscribed, unsubscribed = new(atomic.Int32), new(atomic.Int32)
	srv = mcp.NewServer(&mcp.Implementation{Name: "sub", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			subscribed.Add(1)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error {
			unsubscribed.Add(1)
			return nil
		},
	})
	srv.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: "x"}}}, nil
	})
	return srv, subscribed, unsubscribed
}

// updated waits for the next notifications/resources/updated notice of
// server, or reports false after wait.
func updated(tl *timeline, server string, wait time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for {
		n, err := tl.notes.Next(ctx)
		if err != nil {
			return false
		}
		if u, ok := n.(notify.ResourceUpdated); ok && u.Server == server {
			return true
		}
	}
}

// A subscription reaches the server, its updates come back as notices,
// it is renewed when the session is, and it ends when dropped.
func TestResourceSubscription(t *testing.T) {
	m := newManager(t, manager.Options{})
	tl := watch(t, m)
	srv, subscribed, unsubscribed := subscribable(t)
	require.NoError(t, m.Add("sub", manager.Spec{Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: srv}}))
	waitState(t, m, "sub", manager.StateConnected)
	require.NoError(t, m.Subscribe("sub", "test://r"))
	require.Eventually(t, func() bool { return subscribed.Load() == 1 }, patience, 5*time.Millisecond)
	ctx := context.Background()
	require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://r"}))
	require.True(t, updated(tl, "sub", patience), "no update event")

	require.NoError(t, m.Reconnect("sub"))
	require.Eventually(t, func() bool { return subscribed.Load() == 2 }, patience, 5*time.Millisecond, "not renewed on the new session")
	require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://r"}))
	require.True(t, updated(tl, "sub", patience), "no update event after the reconnect")

	// The session replaced by the reconnect ended its subscription with it.
	before := unsubscribed.Load()
	require.NoError(t, m.Unsubscribe("sub", "test://r"))
	require.Eventually(t, func() bool { return unsubscribed.Load() > before }, patience, 5*time.Millisecond,
		"the server was not told the subscription ended")
}
