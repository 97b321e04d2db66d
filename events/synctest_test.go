package events_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
)

// Publishing never blocks, whatever subscribers do. Inside a synctest
// bubble, synctest.Wait returns once every goroutine is durably blocked or
// finished; if Publish ever waited on a subscriber's channel, the publisher
// would be durably blocked and done would still be open.
func TestPublishNeverBlocks(t *testing.T) {
	const n = 100_000
	tests := []struct {
		name  string
		setup func(bus *events.Bus) (cleanup func())
	}{
		{
			name: "stuck subscriber",
			setup: func(bus *events.Bus) func() {
				s := bus.Subscribe(events.SubscribeOptions{QueueSize: 8})
				return s.Close
			},
		},
		{
			name: "many stuck subscribers, one with a huge queue",
			setup: func(bus *events.Bus) func() {
				var subs []*events.Subscription
				for i := range 10 {
					size := 1
					if i == 0 {
						size = n + 1
					}
					subs = append(subs, bus.Subscribe(events.SubscribeOptions{QueueSize: size}))
				}
				return func() {
					for _, s := range subs {
						s.Close()
					}
				}
			},
		},
		{
			name: "subscriber blocked in Recv that never loops again",
			setup: func(bus *events.Bus) func() {
				s := bus.Subscribe(events.SubscribeOptions{QueueSize: 4})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					_, _ = s.Recv(ctx) // takes one event, then never reads again
					<-ctx.Done()
				}()
				return func() {
					cancel()
					<-done
					s.Close()
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bus := events.NewBus(events.Options{})
				cleanup := tt.setup(bus)

				done := make(chan struct{})
				go func() {
					defer close(done)
					for i := range n {
						bus.Publish(events.KindNotification, "git", events.Fields{"i": i})
					}
				}()
				synctest.Wait()
				select {
				case <-done:
				default:
					// Cleanup would wait for the bus lock the blocked
					// publisher holds; leave it to synctest to report the
					// goroutine left blocked in the bubble.
					t.Fatal("publisher is durably blocked")
				}
				require.Equal(t, uint64(n), bus.Published())
				bus.Close()
				cleanup()
			})
		})
	}
}

// Recv waits exactly until its deadline and no longer, and an event arriving
// in fake time wakes it at that instant.
func TestRecvDeadlineInFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		sub := bus.Subscribe(events.SubscribeOptions{})
		defer sub.Close()

		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err := sub.Recv(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 3*time.Second, time.Since(start))

		go func() {
			time.Sleep(time.Second)
			bus.Publish(events.KindConnected, "git", nil)
		}()
		start = time.Now()
		e, err := sub.Recv(context.Background())
		require.NoError(t, err)
		require.Equal(t, events.KindConnected, e.Kind)
		require.Equal(t, time.Second, time.Since(start))
		require.Equal(t, start.Add(time.Second), e.Time, "Time is the publication time")
	})
}

// A goroutine parked in Recv is durably blocked (it waits on a channel, not
// a spinning loop) and is released by Bus.Close.
func TestBlockedRecvIsIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := events.NewBus(events.Options{})
		sub := bus.Subscribe(events.SubscribeOptions{})
		defer sub.Close()
		errc := make(chan error, 1)
		go func() {
			for {
				if _, err := sub.Recv(context.Background()); err != nil {
					errc <- err
					return
				}
			}
		}()
		bus.Publish(events.KindAdded, "git", nil)
		synctest.Wait() // returns only if the reader parks again
		select {
		case err := <-errc:
			t.Fatalf("reader exited early: %v", err)
		default:
		}
		bus.Close()
		require.ErrorIs(t, <-errc, events.ErrClosed)
	})
}
