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

// A server flooding notifications costs a bounded number of events: past
// the burst they are dropped, and how many is published once the flood
// ebbs. The call's own progress still arrives in full.
func TestNotificationFloodIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const flood = 5000
		p := &peers{newServer: func() *mcp.Server {
			s := mcp.NewServer(&mcp.Implementation{Name: "flood"}, nil)
			s.AddTool(&mcp.Tool{Name: "flood", InputSchema: map[string]any{"type": "object"}},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					for i := range flood {
						_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
							ProgressToken: req.Params.GetProgressToken(), Progress: float64(i + 1)})
					}
					return &mcp.CallToolResult{}, nil
				})
			return s
		}}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		sub := m.Bus().Subscribe(events.SubscribeOptions{QueueSize: 2 * flood})
		defer sub.Close()
		require.NoError(t, m.Add("flood", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "flood", manager.StateConnected)
		require.NoError(t, err)

		var got atomic.Int64
		_, err = m.Call(context.Background(), "flood.flood", nil, manager.CallOptions{Progress: func(manager.Progress) { got.Add(1) }})
		require.NoError(t, err)
		time.Sleep(2 * time.Second) // late progress settles; the limiter refills
		synctest.Wait()
		require.EqualValues(t, flood, got.Load(), "the call's own progress is not rate-limited")

		// One more notification after the flood reports what was dropped.
		_, err = m.Call(context.Background(), "flood.flood", nil, manager.CallOptions{})
		require.NoError(t, err)
		synctest.Wait()
		published, dropped := 0, int64(0)
		for {
			e, ok, _ := sub.TryRecv()
			if !ok {
				break
			}
			switch e.Kind {
			case events.KindNotification:
				published++
			case events.KindNotificationsDropped:
				dropped += e.Int("dropped")
			}
		}
		require.Less(t, published, 3000, "a flood of %d became %d events", 2*flood, published)
		require.Positive(t, dropped)
	})
}
