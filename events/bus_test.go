package events_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
)

// fakeClock is a deterministic Options.Now: every call advances one second.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// seqs returns the Seq of each event.
func seqs(es []events.Event) []uint64 {
	out := make([]uint64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

// recvAll drains everything currently available on sub without waiting.
func recvAll(t *testing.T, sub *events.Subscription) []events.Event {
	t.Helper()
	var out []events.Event
	for {
		e, ok, err := sub.TryRecv()
		require.NoError(t, err)
		if !ok {
			return out
		}
		out = append(out, e)
	}
}

func TestPublishStampsSeqAndTime(t *testing.T) {
	clock := newFakeClock()
	bus := events.NewBus(events.Options{Now: clock.Now})
	defer bus.Close()

	var prev events.Event
	for i := range 5 {
		e := bus.Publish(events.KindConnecting, "git", events.Fields{"attempt": i + 1})
		require.Equal(t, uint64(i+1), e.Seq, "Seq starts at 1 and increases by one")
		require.False(t, e.Time.IsZero(), "Time is stamped")
		require.True(t, e.Time.After(prev.Time), "Time comes from Options.Now")
		require.Equal(t, events.KindConnecting, e.Kind)
		require.Equal(t, "git", e.Server)
		require.Equal(t, int64(i+1), e.Int("attempt"))
		prev = e
	}
	require.Equal(t, uint64(5), bus.Published())

	// The stamped event is exactly what History and subscribers see.
	require.Equal(t, prev, bus.History(1)[0])
}

func TestPublishDefaultClock(t *testing.T) {
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	before := time.Now()
	e := bus.Publish(events.KindIdle, "git", nil)
	after := time.Now()
	require.False(t, e.Time.Before(before))
	require.False(t, e.Time.After(after))
}

func TestHistory(t *testing.T) {
	tests := []struct {
		name        string
		historySize int
		publish     int
		n           int
		want        []uint64
	}{
		{name: "empty bus", historySize: 5, publish: 0, n: 3, want: []uint64{}},
		{name: "fewer held than asked", historySize: 5, publish: 2, n: 3, want: []uint64{1, 2}},
		{name: "newest n oldest first", historySize: 5, publish: 4, n: 2, want: []uint64{3, 4}},
		{name: "bounded by HistorySize", historySize: 5, publish: 12, n: 100, want: []uint64{8, 9, 10, 11, 12}},
		{name: "exactly full", historySize: 5, publish: 5, n: 5, want: []uint64{1, 2, 3, 4, 5}},
		{name: "wrapped, newest one", historySize: 5, publish: 12, n: 1, want: []uint64{12}},
		{name: "n = 0 returns everything held", historySize: 5, publish: 7, n: 0, want: []uint64{3, 4, 5, 6, 7}},
		{name: "n < 0 returns everything held", historySize: 5, publish: 7, n: -1, want: []uint64{3, 4, 5, 6, 7}},
		{name: "default HistorySize is 1000", historySize: 0, publish: 1500, n: -1, want: seqRange(501, 1500)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus(events.Options{HistorySize: tt.historySize})
			defer bus.Close()
			for i := range tt.publish {
				bus.Publish(events.KindNotification, fmt.Sprintf("s%d", i%3), nil)
			}
			require.Equal(t, tt.want, seqs(bus.History(tt.n)))
		})
	}
}

func TestHistoryIsACopy(t *testing.T) {
	bus := events.NewBus(events.Options{HistorySize: 3})
	defer bus.Close()
	bus.Publish(events.KindAdded, "a", nil)
	h := bus.History(-1)
	h[0].Server = "mutated"
	bus.Publish(events.KindAdded, "b", nil)
	require.Equal(t, []string{"a", "b"}, []string{bus.History(-1)[0].Server, bus.History(-1)[1].Server})
}

func seqRange(from, to uint64) []uint64 {
	out := make([]uint64, 0, to-from+1)
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func TestSubscriberReceivesInPublicationOrder(t *testing.T) {
	bus := events.NewBus(events.Options{})
	defer bus.Close()

	early := bus.Subscribe(events.SubscribeOptions{})
	defer early.Close()
	bus.Publish(events.KindAdded, "git", events.Fields{"transport": "stdio"})
	late := bus.Subscribe(events.SubscribeOptions{})
	defer late.Close()
	bus.Publish(events.KindConnecting, "git", events.Fields{"attempt": 1})
	bus.Publish(events.KindConnected, "git", events.Fields{"attempt": 1})
	bus.Publish(events.KindAdded, "fs", nil)

	tests := []struct {
		name  string
		sub   *events.Subscription
		want  []events.Kind
		wantS []uint64
	}{
		{
			name:  "subscribed before everything",
			sub:   early,
			want:  []events.Kind{events.KindAdded, events.KindConnecting, events.KindConnected, events.KindAdded},
			wantS: []uint64{1, 2, 3, 4},
		},
		{
			name:  "only events from subscription on",
			sub:   late,
			want:  []events.Kind{events.KindConnecting, events.KindConnected, events.KindAdded},
			wantS: []uint64{2, 3, 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var kinds []events.Kind
			var got []uint64
			for range tt.want {
				e, err := tt.sub.Recv(context.Background())
				require.NoError(t, err)
				kinds = append(kinds, e.Kind)
				got = append(got, e.Seq)
			}
			require.Equal(t, tt.want, kinds)
			require.Equal(t, tt.wantS, got)
			require.Empty(t, recvAll(t, tt.sub), "nothing else pending")
		})
	}
}

// Several goroutines publish concurrently, one server each. The subscriber
// sees one global order (strictly increasing Seq, identical to History) and
// each publisher's events in the order that publisher issued them, so one
// server's events arrive in the order they happened.
func TestConcurrentPublishersKeepPerServerOrder(t *testing.T) {
	const publishers, perPublisher = 8, 1000
	const total = publishers * perPublisher
	bus := events.NewBus(events.Options{QueueSize: total, HistorySize: total})
	defer bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()

	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			server := fmt.Sprintf("srv-%d", p)
			for i := range perPublisher {
				bus.Publish(events.KindNotification, server, events.Fields{"i": i})
			}
		})
	}
	wg.Wait()

	got := recvAll(t, sub)
	require.Len(t, got, total, "a queue large enough loses nothing")
	require.Equal(t, seqRange(1, total), seqs(got), "Seq is contiguous and strictly increasing")
	require.Equal(t, bus.History(-1), got, "every subscriber sees the bus's one global order")

	next := map[string]int64{}
	for _, e := range got {
		require.Equal(t, next[e.Server], e.Int("i"), "server %s out of order at seq %d", e.Server, e.Seq)
		next[e.Server]++
	}
	for p := range publishers {
		require.Equal(t, int64(perPublisher), next[fmt.Sprintf("srv-%d", p)])
	}
	delivered, dropped := sub.Stats()
	require.Equal(t, uint64(total), delivered)
	require.Zero(t, dropped)
}

func TestOverflowReportsLaggedThenNewest(t *testing.T) {
	tests := []struct {
		name        string
		queueSize   int // per-subscription; 0 uses the bus's QueueSize of 4
		publish     int
		wantMissed  uint64 // 0: no lagged notice expected
		wantSeqs    []uint64
		wantDropped uint64
	}{
		{name: "bus queue size", publish: 10, wantMissed: 6, wantSeqs: []uint64{7, 8, 9, 10}, wantDropped: 6},
		{name: "exactly full is no overflow", publish: 4, wantSeqs: []uint64{1, 2, 3, 4}},
		{name: "one over", publish: 5, wantMissed: 1, wantSeqs: []uint64{2, 3, 4, 5}, wantDropped: 1},
		{name: "per-subscription size overrides", queueSize: 2, publish: 10, wantMissed: 8, wantSeqs: []uint64{9, 10}, wantDropped: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus(events.Options{QueueSize: 4})
			defer bus.Close()
			sub := bus.Subscribe(events.SubscribeOptions{QueueSize: tt.queueSize})
			defer sub.Close()
			for i := range tt.publish {
				bus.Publish(events.KindNotification, "git", events.Fields{"i": i})
			}

			ctx := context.Background()
			if tt.wantMissed > 0 {
				e, err := sub.Recv(ctx)
				require.NoError(t, err)
				require.Equal(t, events.KindLagged, e.Kind, "the lag notice comes first")
				require.Equal(t, tt.wantMissed, e.Fields["missed"], "missed is an exact uint64 count")
				require.Zero(t, e.Seq, "lag notices are private and carry Seq 0")
				require.False(t, e.Time.IsZero())
			}
			var got []uint64
			for range tt.wantSeqs {
				e, err := sub.Recv(ctx)
				require.NoError(t, err)
				require.NotEqual(t, events.KindLagged, e.Kind)
				got = append(got, e.Seq)
			}
			require.Equal(t, tt.wantSeqs, got, "then the newest events, in order")
			require.Empty(t, recvAll(t, sub), "then nothing pending")

			delivered, dropped := sub.Stats()
			require.Equal(t, uint64(len(tt.wantSeqs)), delivered, "lag notices are not counted as delivered")
			require.Equal(t, tt.wantDropped, dropped)
			require.Equal(t, bus.Published(), delivered+dropped)
		})
	}
}

// A second overflow after the lag notice was read produces a second notice;
// the notices together cover the gap exactly.
func TestOverflowTwiceGivesTwoNotices(t *testing.T) {
	bus := events.NewBus(events.Options{QueueSize: 2})
	defer bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	for range 5 { // queue 4,5; missed 3
		bus.Publish(events.KindNotification, "git", nil)
	}
	e, ok, err := sub.TryRecv()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(3), e.Fields["missed"])
	for range 3 { // queue 7,8; missed 3 more (4,5,6)
		bus.Publish(events.KindNotification, "git", nil)
	}
	got := recvAll(t, sub)
	require.Len(t, got, 3)
	require.Equal(t, events.KindLagged, got[0].Kind)
	require.Equal(t, uint64(3), got[0].Fields["missed"])
	require.Equal(t, []uint64{7, 8}, seqs(got[1:]))
	delivered, dropped := sub.Stats()
	require.Equal(t, uint64(2), delivered)
	require.Equal(t, uint64(6), dropped)
	require.Equal(t, bus.Published(), delivered+dropped)
}

// A stuck subscriber never costs another subscriber anything.
func TestStuckSubscriberDoesNotAffectOthers(t *testing.T) {
	bus := events.NewBus(events.Options{QueueSize: 4})
	defer bus.Close()
	stuck := bus.Subscribe(events.SubscribeOptions{})
	defer stuck.Close()
	big := bus.Subscribe(events.SubscribeOptions{QueueSize: 100})
	defer big.Close()
	for range 100 {
		bus.Publish(events.KindNotification, "git", nil)
	}
	require.Equal(t, seqRange(1, 100), seqs(recvAll(t, big)))
	_, dropped := stuck.Stats()
	require.Equal(t, uint64(96), dropped)
}

func TestBusCloseDrainsThenErrClosed(t *testing.T) {
	bus := events.NewBus(events.Options{QueueSize: 2})
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	for range 3 {
		bus.Publish(events.KindNotification, "git", nil)
	}
	bus.Close()
	bus.Close() // idempotent

	ctx := context.Background()
	e, err := sub.Recv(ctx)
	require.NoError(t, err)
	require.Equal(t, events.KindLagged, e.Kind, "a pending lag notice survives Close")
	require.Equal(t, uint64(1), e.Fields["missed"])
	for _, want := range []uint64{2, 3} {
		e, err := sub.Recv(ctx)
		require.NoError(t, err, "queued events are still delivered after Close")
		require.Equal(t, want, e.Seq)
	}
	for range 2 {
		_, err = sub.Recv(ctx)
		require.ErrorIs(t, err, events.ErrClosed, "then ErrClosed, every time")
	}
	_, ok, err := sub.TryRecv()
	require.False(t, ok)
	require.ErrorIs(t, err, events.ErrClosed)
}

// blockedRecv starts a goroutine that calls sub.Recv and waits until it is
// durably blocked there, so the caller knows the Close that follows has a
// waiter to wake. Call it inside a synctest bubble, with sub subscribed in
// that bubble too: Recv's wait only counts as durable on a channel the
// bubble created.
func blockedRecv(t *testing.T, sub *events.Subscription) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := sub.Recv(context.Background())
		errc <- err
	}()
	synctest.Wait()
	select {
	case err := <-errc:
		t.Fatalf("Recv returned before anything was closed: %v", err)
	default:
	}
	return errc
}

// If Close did not wake the waiter, the receiver would stay blocked and
// synctest would report the bubble deadlocked.
func TestBusCloseWakesBlockedRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := events.NewBus(events.Options{})
		sub := bus.Subscribe(events.SubscribeOptions{})
		defer sub.Close()
		errc := blockedRecv(t, sub)
		bus.Close()
		require.ErrorIs(t, <-errc, events.ErrClosed)
	})
}

func TestPublishAfterCloseIsNoOp(t *testing.T) {
	bus := events.NewBus(events.Options{})
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	bus.Publish(events.KindAdded, "git", nil)
	bus.Close()

	e := bus.Publish(events.KindRemoved, "git", events.Fields{"reason": "late"})
	require.Zero(t, e.Seq, "not sequenced")
	require.Equal(t, uint64(1), bus.Published())
	require.Equal(t, []uint64{1}, seqs(bus.History(-1)), "not recorded")

	got, err := sub.Recv(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(1), got.Seq)
	_, err = sub.Recv(context.Background())
	require.ErrorIs(t, err, events.ErrClosed, "not delivered")
}

func TestSubscribeAfterClose(t *testing.T) {
	bus := events.NewBus(events.Options{})
	bus.Publish(events.KindAdded, "git", nil)
	bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{})
	_, err := sub.Recv(context.Background())
	require.ErrorIs(t, err, events.ErrClosed)
	sub.Close()
	sub.Close()
}

func TestSubscriptionClose(t *testing.T) {
	tests := []struct {
		name          string
		publishBefore int // events queued before Close (QueueSize 4)
	}{
		{name: "empty queue", publishBefore: 0},
		{name: "queued events are discarded", publishBefore: 3},
		{name: "pending lag notice is discarded", publishBefore: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus(events.Options{QueueSize: 4})
			defer bus.Close()
			sub := bus.Subscribe(events.SubscribeOptions{})
			other := bus.Subscribe(events.SubscribeOptions{QueueSize: 100})
			defer other.Close()
			for range tt.publishBefore {
				bus.Publish(events.KindNotification, "git", nil)
			}
			sub.Close()
			sub.Close() // idempotent

			bus.Publish(events.KindAdded, "git", nil)
			statsDelivered, statsDropped := sub.Stats()

			_, err := sub.Recv(context.Background())
			require.ErrorIs(t, err, events.ErrClosed)
			_, ok, err := sub.TryRecv()
			require.False(t, ok)
			require.ErrorIs(t, err, events.ErrClosed)

			d, dr := sub.Stats()
			require.Equal(t, statsDelivered, d, "later publishes are not delivered")
			require.Equal(t, statsDropped, dr, "later publishes are not counted as dropped either")
			require.Len(t, recvAll(t, other), tt.publishBefore+1, "other subscribers are unaffected")
		})
	}
}

func TestSubscriptionCloseWakesBlockedRecv(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		sub := bus.Subscribe(events.SubscribeOptions{})
		errc := blockedRecv(t, sub)
		sub.Close()
		require.ErrorIs(t, <-errc, events.ErrClosed)
	})
}

func TestRecvHonoursContext(t *testing.T) {
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := sub.Recv(ctx)
	require.ErrorIs(t, err, context.Canceled)

	// A cancelled context does not hide an event that is already queued.
	bus.Publish(events.KindAdded, "git", nil)
	e, err := sub.Recv(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), e.Seq)

	// Cancelling while Recv waits unblocks it.
	ctx, cancel = context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := sub.Recv(ctx)
		errc <- err
	}()
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	// The subscription still works afterwards.
	bus.Publish(events.KindRemoved, "git", nil)
	e, err = sub.Recv(context.Background())
	require.NoError(t, err)
	require.Equal(t, uint64(2), e.Seq)
}

func TestReadySignalsQueueChanges(t *testing.T) {
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	bus.Publish(events.KindAdded, "git", nil)
	bus.Publish(events.KindAdded, "fs", nil)
	select {
	case <-sub.Ready():
	default:
		t.Fatal("Ready not signalled after Publish")
	}
	require.Len(t, recvAll(t, sub), 2, "one coalesced signal, drain with TryRecv")
}

func TestEventFormat(t *testing.T) {
	tests := []struct {
		name string
		e    events.Event
		want string
	}{
		{
			name: "spec sample",
			e: events.Event{Seq: 12, Kind: events.KindBackoff, Server: "git", Fields: events.Fields{
				"error": `spawn: exec: "git-mcp": executable file not found in $PATH`, "delay_ms": 400, "attempt": 3,
			}},
			want: `#12 git backoff attempt=3 delay_ms=400 error="spawn: exec: \"git-mcp\": executable file not found in $PATH"`,
		},
		{
			name: "host-wide event without server",
			e: events.Event{Seq: 7, Kind: events.KindConfigApplied, Fields: events.Fields{
				"file": "mcp.lua", "added": []string{"fs", "git"}, "removed": []string{},
			}},
			want: `#7 config_applied added=[fs git] file="mcp.lua" removed=[]`,
		},
		{
			name: "no fields",
			e:    events.Event{Seq: 3, Kind: events.KindIdle, Server: "fs"},
			want: `#3 fs idle`,
		},
		{
			name: "lag notice",
			e:    events.Event{Kind: events.KindLagged, Fields: events.Fields{"missed": uint64(6)}},
			want: `#0 lagged missed=6`,
		},
		{
			name: "circuit with bool and unicode",
			e: events.Event{Seq: 99, Kind: events.KindCircuit, Server: "web", Fields: events.Fields{
				"from": "closed", "to": "open", "forced": true, "note": "5 failures in 2m…",
			}},
			want: `#99 web circuit forced=true from="closed" note="5 failures in 2m…" to="open"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.e.Format())
		})
	}
}

func TestEventAccessors(t *testing.T) {
	e := events.Event{Fields: events.Fields{
		"int": 3, "int64": int64(4), "uint64": uint64(5), "float64": float64(6.9), "str": "x", "bool": true,
	}}
	tests := []struct {
		key     string
		wantInt int64
		wantStr string
	}{
		{key: "int", wantInt: 3},
		{key: "int64", wantInt: 4},
		{key: "uint64", wantInt: 5},
		{key: "float64", wantInt: 6},
		{key: "str", wantStr: "x"},
		{key: "bool"},
		{key: "missing"},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			require.Equal(t, tt.wantInt, e.Int(tt.key))
			require.Equal(t, tt.wantStr, e.Text(tt.key))
		})
	}
	require.Zero(t, events.Event{}.Int("x"), "nil Fields")
}
