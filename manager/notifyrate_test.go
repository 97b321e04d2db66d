package manager_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// A server flooding notifications costs a bounded number of notices: past
// the burst they are dropped, and how many is published. The call's own
// progress still arrives in full.
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
		notes := m.Notices().Listen(notify.ListenOptions{QueueSize: 2 * flood})
		defer notes.Close()
		require.NoError(t, m.Add("flood", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "flood", manager.StateConnected)
		require.NoError(t, err)

		var got atomic.Int64
		_, err = m.Call(context.Background(), "flood.flood", nil, manager.CallOptions{Progress: func(manager.Progress) { got.Add(1) }})
		require.NoError(t, err)
		time.Sleep(2 * time.Second) // late progress settles; the limiter refills
		synctest.Wait()
		require.EqualValues(t, flood, got.Load(), "the call's own progress is not rate-limited")

		_, err = m.Call(context.Background(), "flood.flood", nil, manager.CallOptions{})
		require.NoError(t, err)
		time.Sleep(10 * time.Second) // the last count is reported
		synctest.Wait()
		published := 0
		for {
			n, ok, _ := notes.TryNext()
			if !ok {
				break
			}
			require.IsType(t, notify.Progress{}, n)
			published++
		}
		dropped := int64(0)
		for {
			e, ok, _ := sub.TryRecv()
			if !ok {
				break
			}
			if e.Kind == events.KindNotificationsDropped {
				dropped += e.Int("dropped")
			}
		}
		require.Less(t, published, 3000, "a flood of %d became %d notices", 2*flood, published)
		require.EqualValues(t, 2*flood, int64(published)+dropped, "every notification is a notice or counted dropped")
	})
}

// A server that floods log messages for a long time is said to drop them
// once when dropping starts and then every few seconds, with the count
// since — not once per message let through (hundreds a second, each a
// WARN line in the log). Every dropped message is counted.
func TestDroppedNotificationsAreSummarised(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			perSecond = 1000
			seconds   = 10
		)
		p := &peers{newServer: func() *mcp.Server {
			s := mcp.NewServer(&mcp.Implementation{Name: "chatty"}, nil)
			s.AddTool(&mcp.Tool{Name: "chat", InputSchema: map[string]any{"type": "object"}},
				func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					for i := range perSecond * seconds {
						// Not the call's context: its _meta carries no level,
						// so the session's (set at connect) applies.
						_ = req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: fmt.Sprint(i)})
						time.Sleep(time.Second / perSecond)
					}
					return &mcp.CallToolResult{}, nil
				})
			return s
		}}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		tl := watch(t, m)
		notes := m.Notices().Listen(notify.ListenOptions{QueueSize: perSecond * seconds})
		defer notes.Close()
		require.NoError(t, m.Add("chatty", fakeSpec(t, nil)))
		tl.until("chatty", events.KindConnected, time.Second)
		start := time.Since(tl.start)

		_, err := m.Call(context.Background(), "chatty.chat", nil, manager.CallOptions{Timeout: time.Minute})
		require.NoError(t, err)
		time.Sleep(10 * time.Second) // the flood is over; the last count comes
		synctest.Wait()

		var at []time.Duration
		dropped := int64(0)
		for _, e := range tl.quiet(0) {
			if e.Kind == events.KindNotificationsDropped {
				at = append(at, e.At-start)
				dropped += int64(e.Fields["dropped"].(int))
			}
		}
		heard := 0
		for {
			n, ok, _ := notes.TryNext()
			if !ok {
				break
			}
			require.IsType(t, notify.LogMessage{}, n)
			heard++
		}
		require.EqualValues(t, perSecond*seconds, int64(heard)+dropped, "every message is a notice or counted dropped")
		// The burst of 1000, sent 1000 a second against 500 refilled, is
		// spent at message 1999 (1.999s): that drop is said at once, then
		// the count every 5s; the flood ends at 10s, and its last count
		// comes 5s after the one before.
		first := 1999 * time.Millisecond
		require.LessOrEqual(t, len(at), 3, "notifications_dropped events")
		require.Equal(t, []time.Duration{first, first + 5*time.Second, first + 10*time.Second}, at)
	})
}

// Resource updates are not rate-limited: a burst of 5,000 reaches a
// lossless listener, every one, in order.
func TestResourceUpdatesAreNotRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const burst = 5000
		srv, subscribed, _ := subscribable(t)
		p := &peers{newServer: func() *mcp.Server { return srv }}
		m := newManager(t, manager.Options{Dial: p.dial})
		l := m.Notices().Listen(notify.ListenOptions{QueueSize: 64, Lossless: true})
		defer l.Close()
		require.NoError(t, m.Add("burst", fakeSpec(t, nil)))
		waitConnected(t, m, "burst")
		require.NoError(t, m.Subscribe("burst", "test://r"))
		synctest.Wait()
		require.EqualValues(t, 1, subscribed.Load())

		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range burst {
				_ = srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: "test://r", Meta: mcp.Meta{"n": i}})
			}
		}()
		for i := range burst {
			n, err := l.Next(context.Background())
			require.NoError(t, err)
			u, ok := n.(notify.ResourceUpdated)
			require.True(t, ok, "%T: %v", n, n.Fields())
			require.Equal(t, "test://r", u.URI)
			require.Equal(t, map[string]any{"n": float64(i)}, u.Meta, "in order, without the upstream's subscription id")
		}
		<-done
	})
}
