package gateway_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
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
		cs, err := c.Connect(ctx, r.streamable(path), legacy)
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

// A burst of 5,000 resource updates from a server reaches a client
// subscribed through the gateway, every one of them, in the order the
// server sent them (each carries its number in _meta, which passes
// through): nothing on the way drops or reorders them.
func TestResourceUpdateBurstReachesTheClientInOrder(t *testing.T) {
	const burst = 5000
	var subscribed atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "burst", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			subscribed.Add(1)
			return nil
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://r", Text: "x"}}}, nil
	})
	r := newRig(t, map[string]manager.Spec{"burst": {Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: srv}}}, gateway.HTTPOptions{})
	r.wait("burst")

	var mu sync.Mutex
	var got []float64 // the number in each update's _meta, as it came
	c := mcp.NewClient(&mcp.Implementation{Name: "burst-test", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			n, _ := req.Params.Meta["n"].(float64)
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := c.Connect(ctx, r.streamable("/mcp"), legacy)
	require.NoError(t, err)
	defer cs.Close()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		res, err := cs.ListResources(ctx, nil)
		require.NoError(c, err)
		require.True(c, slices.ContainsFunc(res.Resources, func(r *mcp.Resource) bool { return r.URI == "test://r" }))
	}, time.Minute, 10*time.Millisecond, "the resource listed")
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://r"}))
	require.Eventually(t, func() bool { return subscribed.Load() == 1 }, time.Minute, 10*time.Millisecond, "subscribed upstream")

	for i := range burst {
		require.NoError(t, srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://r", Meta: mcp.Meta{"n": i}}))
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		require.Equal(c, burst, len(got))
	}, time.Minute, 10*time.Millisecond, "every update reached the client")
	mu.Lock()
	defer mu.Unlock()
	for i, n := range got {
		require.EqualValues(t, i, n, "update %d came out of order", i)
	}
}
