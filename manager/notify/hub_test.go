package notify_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

func update(i int) notify.ResourceUpdated {
	return notify.ResourceUpdated{Origin: notify.Origin{Server: "s"}, URI: fmt.Sprintf("test://r/%d", i)}
}

func logMessage(i int) notify.LogMessage {
	return notify.LogMessage{Origin: notify.Origin{Server: "s"}, Level: "info", Data: i}
}

// describe names a notice for comparing sequences.
func describe(n notify.Notice) string {
	switch n := n.(type) {
	case notify.ResourceUpdated:
		return n.URI
	case notify.LogMessage:
		return fmt.Sprint("log ", n.Data)
	case notify.Lost:
		return fmt.Sprintf("lost %s: %d updates, %d logs", n.Server, n.ResourceUpdates, n.LogMessages)
	}
	return fmt.Sprintf("%T", n)
}

// drain takes every notice queued now.
func drain(t *testing.T, l *notify.Listener) []string {
	t.Helper()
	var got []string
	for {
		n, ok, err := l.TryNext()
		require.NoError(t, err)
		if !ok {
			return got
		}
		got = append(got, describe(n))
	}
}

// A lossless listener whose consumer is slower than the server gets every
// resource update, in order: the publisher waits for room instead of
// dropping.
func TestLosslessListenerGetsEveryUpdateInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5000
		hub := notify.NewHub()
		defer hub.Close()
		l := hub.Listen(notify.ListenOptions{QueueSize: 16, Lossless: true})
		defer l.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range n {
				hub.Publish(context.Background(), update(i))
			}
		}()
		for i := range n {
			got, err := l.Next(context.Background())
			require.NoError(t, err)
			require.Equal(t, update(i).URI, describe(got))
			time.Sleep(time.Millisecond) // a consumer slower than the server
		}
		<-done
		require.Empty(t, drain(t, l))
	})
}

// A consumer that takes nothing holds its publisher for one stall, no
// more; what it could not take is reported where it went missing, and a
// listener that keeps up is not held back meanwhile beyond that stall.
func TestStuckListenerCostsOneStallThenCountsLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := notify.NewHub()
		defer hub.Close()
		stuck := hub.Listen(notify.ListenOptions{QueueSize: 4, Lossless: true, Stall: 5 * time.Second})
		defer stuck.Close()
		other := hub.Listen(notify.ListenOptions{QueueSize: 100, Lossless: true})
		defer other.Close()

		start := time.Now()
		for i := range 20 {
			hub.Publish(context.Background(), update(i))
		}
		require.Equal(t, 5*time.Second, time.Since(start), "one stall, then no more waiting")
		require.Len(t, drain(t, other), 20)

		want := []string{"test://r/0", "test://r/1", "test://r/2", "test://r/3", "lost s: 16 updates, 0 logs"}
		require.Equal(t, want, drain(t, stuck))
		// Emptied: it is waited for again.
		hub.Publish(context.Background(), update(20))
		require.Equal(t, []string{"test://r/20"}, drain(t, stuck))
	})
}

// Log messages never wait, even for a lossless listener: a full queue
// drops them, and the count comes before the next notice queued after
// them.
func TestLogMessagesNeverWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := notify.NewHub()
		defer hub.Close()
		l := hub.Listen(notify.ListenOptions{QueueSize: 2, Lossless: true})
		defer l.Close()
		start := time.Now()
		for i := range 5 {
			hub.Publish(context.Background(), logMessage(i))
		}
		require.Zero(t, time.Since(start))
		n, ok, err := l.TryNext()
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "log 0", describe(n))
		hub.Publish(context.Background(), update(9))
		require.Equal(t, []string{"log 1", "lost s: 0 updates, 3 logs", "test://r/9"}, drain(t, l))
	})
}

// A listener that is not lossless never makes a publisher wait.
func TestLossyListenerNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := notify.NewHub()
		defer hub.Close()
		l := hub.Listen(notify.ListenOptions{QueueSize: 1})
		defer l.Close()
		start := time.Now()
		for i := range 3 {
			hub.Publish(context.Background(), update(i))
		}
		require.Zero(t, time.Since(start))
		require.Equal(t, []string{"test://r/0", "lost s: 2 updates, 0 logs"}, drain(t, l))
	})
}

// Closing the hub releases a publisher waiting for room; the listener
// hands out what it holds, then ErrClosed. A publisher whose context ends
// stops waiting too, and what it held is counted.
func TestWaitingPublisherReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hub := notify.NewHub()
		l := hub.Listen(notify.ListenOptions{QueueSize: 1, Lossless: true, Stall: time.Hour})
		defer l.Close()
		hub.Publish(context.Background(), update(0))

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			hub.Publish(ctx, update(1))
		}()
		synctest.Wait()
		cancel()
		<-done

		done = make(chan struct{})
		go func() {
			defer close(done)
			hub.Publish(context.Background(), update(2))
		}()
		synctest.Wait()
		hub.Close()
		<-done
		require.Equal(t, []string{"test://r/0", "lost s: 1 updates, 0 logs"}, drain2(t, l))
		_, err := l.Next(context.Background())
		require.ErrorIs(t, err, notify.ErrClosed)
	})
}

// drain2 takes every notice until ErrClosed.
func drain2(t *testing.T, l *notify.Listener) []string {
	var got []string
	for {
		n, ok, err := l.TryNext()
		if err != nil || !ok {
			return got
		}
		got = append(got, describe(n))
	}
}

// Notices render as the notification events Lua hooks and the log have
// always seen: method and params as the server sent them.
func TestNoticeFields(t *testing.T) {
	o := notify.Origin{Server: "s", Client: "c (1)"}
	tests := []struct {
		n    notify.Notice
		want events.Fields
	}{
		{notify.ResourceUpdated{Origin: o, URI: "u"}, events.Fields{"method": "notifications/resources/updated", "params": map[string]any{"uri": "u"}, "client": "c (1)"}},
		{notify.ListChanged{Origin: notify.Origin{Server: "s"}, List: notify.Tools}, events.Fields{"method": "notifications/tools/list_changed", "params": nil}},
		{notify.LogMessage{Origin: notify.Origin{Server: "s"}, Level: "info", Logger: "l", Data: "d"},
			events.Fields{"method": "notifications/message", "params": map[string]any{"level": "info", "logger": "l", "data": "d"}}},
		{notify.Progress{Origin: notify.Origin{Server: "s"}, Progress: 1, Total: 2, Message: "m"},
			events.Fields{"method": "notifications/progress", "params": map[string]any{"progress": 1.0, "total": 2.0, "message": "m"}}},
	}
	for _, tt := range tests {
		require.Equal(t, events.KindNotification, tt.n.Kind())
		require.Equal(t, tt.want, tt.n.Fields())
	}
	lost := notify.Lost{Origin: o, ResourceUpdates: 2, LogMessages: 1}
	require.Equal(t, events.KindLagged, lost.Kind())
	require.EqualValues(t, 3, lost.Fields()["missed"])
}

// Queued counts what TryNext would hand out now, a Lost notice as one.
func TestQueuedCountsWhatTryNextHandsOut(t *testing.T) {
	hub := notify.NewHub()
	defer hub.Close()
	l := hub.Listen(notify.ListenOptions{QueueSize: 2})
	defer l.Close()
	require.Zero(t, l.Queued())
	for i := range 5 {
		hub.Publish(context.Background(), logMessage(i))
	}
	require.Equal(t, 3, l.Queued(), "two queued and the count of the three lost")
	_, _, _ = l.TryNext()
	require.Equal(t, 2, l.Queued())
	require.Len(t, drain(t, l), 2)
	require.Zero(t, l.Queued())
}
