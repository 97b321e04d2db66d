package events_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
)

// streamCheck verifies that no event was lost silently, on everything one
// subscriber received, in order: Seq strictly increasing, every gap exactly
// covered by the lag notices received since the previous event, and each
// server's events in the order its publisher issued them.
type streamCheck struct {
	t           *testing.T
	name        string
	start       uint64 // Published() when the subscription was made
	lastSeq     uint64 // Seq of the last real event, or start
	pending     uint64 // missed reported since the last real event
	delivered   uint64
	missed      uint64
	lagNotices  int
	lastPerServ map[string]int64
}

func newStreamCheck(t *testing.T, name string, publishedAtSubscribe uint64) *streamCheck {
	return &streamCheck{t: t, name: name, start: publishedAtSubscribe, lastSeq: publishedAtSubscribe, lastPerServ: map[string]int64{}}
}

func (c *streamCheck) add(e events.Event) {
	t := c.t
	if e.Kind == events.KindLagged {
		n, ok := e.Fields["missed"].(uint64)
		require.True(t, ok, "%s: missed must be a uint64, got %T", c.name, e.Fields["missed"])
		require.NotZero(t, n, "%s: empty lag notice", c.name)
		require.Zero(t, e.Seq, "%s: lag notices carry Seq 0", c.name)
		c.pending += n
		c.missed += n
		c.lagNotices++
		return
	}
	require.Equal(t, c.lastSeq+c.pending+1, e.Seq,
		"%s: after seq %d and %d reported missed, got seq %d", c.name, c.lastSeq, c.pending, e.Seq)
	if last, seen := c.lastPerServ[e.Server]; seen {
		require.Greater(t, e.Int("i"), last, "%s: server %s out of order", c.name, e.Server)
	}
	c.lastPerServ[e.Server] = e.Int("i")
	c.lastSeq = e.Seq
	c.pending = 0
	c.delivered++
}

// finish checks that the stream ended on a real event and that the counts
// add up to what the bus published.
func (c *streamCheck) finish(sub *events.Subscription, published uint64) {
	t := c.t
	require.Zero(t, c.pending, "%s: lag notice not followed by an event", c.name)
	require.Equal(t, published, c.lastSeq, "%s: did not see the last event", c.name)
	require.Equal(t, published-c.start, c.delivered+c.missed,
		"%s: delivered+missed != published since subscribing", c.name)
	delivered, dropped := sub.Stats()
	require.Equal(t, c.delivered, delivered, "%s: Stats delivered", c.name)
	require.Equal(t, c.missed, dropped, "%s: Stats dropped", c.name)
}

// Storm: concurrent publishers, a fast subscriber draining concurrently and a
// stuck one that reads only at the end. Run with -race.
func TestStorm(t *testing.T) {
	const publishers, perPublisher = 4, 10_000
	const total = publishers * perPublisher
	ctx := context.Background()

	tests := []struct {
		name      string
		fastQueue int
		stuckSize int
	}{
		{name: "tiny queues", fastQueue: 8, stuckSize: 4},
		{name: "default queues", fastQueue: 0, stuckSize: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bus := events.NewBus(events.Options{})
			// A few events before anybody subscribes: subscribers must count
			// only what was published after they subscribed.
			for i := range 10 {
				bus.Publish(events.KindAdded, fmt.Sprintf("pre-%d", i), nil)
			}
			base := bus.Published()

			fast := bus.Subscribe(events.SubscribeOptions{QueueSize: tt.fastQueue})
			defer fast.Close()
			stuck := bus.Subscribe(events.SubscribeOptions{QueueSize: tt.stuckSize})
			defer stuck.Close()

			// The fast subscriber drains concurrently; it only collects, the
			// test goroutine checks (require must not run off it).
			type result struct {
				got []events.Event
				err error
			}
			fastDone := make(chan result, 1)
			go func() {
				var got []events.Event
				for {
					e, err := fast.Recv(ctx)
					if err != nil {
						fastDone <- result{got, err}
						return
					}
					got = append(got, e)
				}
			}()

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
			published := bus.Published()
			require.Equal(t, base+total, published)
			bus.Close()

			res := <-fastDone
			require.ErrorIs(t, res.err, events.ErrClosed)
			fastCheck := newStreamCheck(t, "fast", base)
			for _, e := range res.got {
				fastCheck.add(e)
			}
			fastCheck.finish(fast, published)

			stuckCheck := newStreamCheck(t, "stuck", base)
			for {
				e, err := stuck.Recv(ctx)
				if err != nil {
					require.ErrorIs(t, err, events.ErrClosed)
					break
				}
				stuckCheck.add(e)
			}
			stuckCheck.finish(stuck, published)
			require.Positive(t, stuckCheck.missed, "the stuck subscriber must have overflowed")
			require.Positive(t, stuckCheck.lagNotices)

			t.Logf("fast: delivered %d missed %d (%d notices); stuck: delivered %d missed %d (%d notices)",
				fastCheck.delivered, fastCheck.missed, fastCheck.lagNotices,
				stuckCheck.delivered, stuckCheck.missed, stuckCheck.lagNotices)
		})
	}
}

// Subscribers join and leave while publishers run; each one still sees a
// gap-free (or lag-covered) stream from the moment it subscribed.
func TestStormWithChurningSubscribers(t *testing.T) {
	const publishers, perPublisher, churners = 3, 3_000, 4
	bus := events.NewBus(events.Options{QueueSize: 16})
	ctx := context.Background()

	var pubs sync.WaitGroup
	for p := range publishers {
		pubs.Go(func() {
			for i := range perPublisher {
				bus.Publish(events.KindNotification, fmt.Sprintf("srv-%d", p), events.Fields{"i": i})
			}
		})
	}
	var subs sync.WaitGroup
	for c := range churners {
		subs.Go(func() {
			for round := range 20 {
				// Published() read before Subscribe is a lower bound on what
				// precedes the subscription; the first Seq seen tells the rest.
				sub := bus.Subscribe(events.SubscribeOptions{})
				var got []events.Event
				for range 50 {
					e, ok, err := sub.TryRecv()
					if err != nil || !ok {
						break
					}
					got = append(got, e)
				}
				sub.Close()
				_, err := sub.Recv(ctx)
				if err != events.ErrClosed {
					t.Errorf("churner %d round %d: Recv after Close: %v", c, round, err)
				}
				var last uint64
				var pending uint64
				for _, e := range got {
					if e.Kind == events.KindLagged {
						pending += e.Fields["missed"].(uint64)
						continue
					}
					if last != 0 && e.Seq != last+pending+1 {
						t.Errorf("churner %d round %d: seq %d after %d with %d missed", c, round, e.Seq, last, pending)
					}
					last, pending = e.Seq, 0
				}
			}
		})
	}
	pubs.Wait()
	subs.Wait()
	bus.Close()
	require.Equal(t, uint64(publishers*perPublisher), bus.Published())
}
