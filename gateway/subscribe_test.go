package gateway_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A client's resource subscription reaches the server behind the gateway,
// the server's updates reach the client, on /mcp and on the server's own
// endpoint, and a client that leaves takes its subscription with it.
func TestResourceSubscriptionsReachTheServer(t *testing.T) {
	var subscribed, unsubscribed atomic.Int32
	var lastURI atomic.Value
	srv := mcp.NewServer(&mcp.Implementation{Name: "sub", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *mcp.SubscribeRequest) error {
			lastURI.Store(req.Params.URI)
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
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://t/{id}", Name: "t"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "t"}}}, nil
	})
	r := newRig(t, map[string]manager.Spec{"sub": {Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: srv}}}, gateway.HTTPOptions{})
	r.wait("sub")

	// A URI made from a template is subscribed at the server of the template.
	cs := connect(t, r.streamable("/mcp"), nil)
	before := subscribed.Load()
	require.NoError(t, cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "test://t/7"}))
	pollUntil(t, 10*time.Second, "the template subscription upstream", func() bool { return subscribed.Load() > before })
	require.Equal(t, "test://t/7", lastURI.Load())
	require.Error(t, cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "nowhere://x"}), "a URI no server lists")
	require.NoError(t, cs.Close())

	for _, path := range []string{"/mcp", "/servers/sub/mcp"} {
		updates := make(chan string, 10)
		c := mcp.NewClient(&mcp.Implementation{Name: "sub-test", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
				updates <- req.Params.URI
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs, err := c.Connect(ctx, r.streamable(path), nil)
		require.NoError(t, err)
		pollUntil(t, 10*time.Second, "the resource listed on "+path, func() bool {
			res, err := cs.ListResources(ctx, nil)
			return err == nil && slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == "test://r" })
		})
		before := subscribed.Load()
		subCtx, stop := context.WithCancel(ctx)
		go func() { _ = cs.Subscribe(subCtx, &mcp.SubscribeParams{URI: "test://r"}) }()
		pollUntil(t, 10*time.Second, "the subscription upstream", func() bool { return subscribed.Load() > before })

		require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://r"}))
		select {
		case uri := <-updates:
			require.Equal(t, "test://r", uri)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no resource update reached the client", path)
		}

		gone := unsubscribed.Load()
		stop()
		require.NoError(t, cs.Close())
		pollUntil(t, 10*time.Second, "the subscription dropped upstream when the client left", func() bool { return unsubscribed.Load() > gone })
		cancel()
	}
}
