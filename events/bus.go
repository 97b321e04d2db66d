package events

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by [Subscription.Recv] once the bus is closed and the
// subscription's queue is drained, or after the subscription is closed.
var ErrClosed = errors.New("events: bus closed")

// Options configures a [Bus]. The zero value is ready to use.
type Options struct {
	// QueueSize is the default capacity of each subscriber's queue.
	// If zero, 1024.
	QueueSize int
	// HistorySize is how many recent events [Bus.History] can return.
	// If zero, 1000.
	HistorySize int
	// Now returns the current time. If nil, time.Now.
	Now func() time.Time
}

// Bus broadcasts events to every subscriber. Create it with [NewBus].
type Bus struct {
	now       func() time.Time
	queueSize int
	// interest is what the subscribers ask for, stored under mu and read
	// without it (Wants).
	interest atomic.Pointer[interest]

	mu sync.Mutex
	// mu guards the following.
	seq     uint64
	history ring
	subs    map[*Subscription]struct{}
	closed  bool
}

// NewBus returns an open bus.
func NewBus(opts Options) *Bus {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1024
	}
	if opts.HistorySize <= 0 {
		opts.HistorySize = 1000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Bus{
		now:       opts.Now,
		queueSize: opts.QueueSize,
		history:   newRing(opts.HistorySize),
		subs:      make(map[*Subscription]struct{}),
	}
}

// Publish stamps an event with the next sequence number and the current time
// and delivers it to every subscriber's queue. The host publishes typed
// payloads ([Bus.Emit]); Publish, a kind and plain fields, is for events
// that need no type (tests, programs that embed the bus). It never blocks on a
// subscriber. Publishing on a closed bus is a no-op that returns the event
// with Seq 0.
func (b *Bus) Publish(kind Kind, server string, fields Fields) Event {
	return b.publish(Event{Kind: kind, Server: server, Fields: fields})
}

// withClient adds client to fields when set.
func withClient(fields Fields, client string) Fields {
	if client == "" {
		return fields
	}
	if fields == nil {
		fields = Fields{}
	}
	fields["client"] = client
	return fields
}

func (b *Bus) publish(e Event) Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	e.Time = b.now() // under the lock, so Time never runs backwards against Seq
	if b.closed {
		return e
	}
	b.seq++
	e.Seq = b.seq
	b.history.push(e)
	for s := range b.subs {
		s.deliver(e)
	}
	return e
}

// Emit publishes p as an event of server (and, for a client's own session
// of a per-client server, of client): Kind and Fields come from p, with
// client added to the fields when set. Like Publish it never blocks.
func (b *Bus) Emit(server, client string, p Payload) Event {
	return b.publish(Event{Kind: p.Kind(), Server: server, Client: client, Fields: withClient(p.Fields(), client), Payload: p})
}

// Published reports how many events the bus has published so far.
func (b *Bus) Published() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

// History returns up to n of the most recent events, oldest first. n <= 0
// returns everything held.
func (b *Bus) History(n int) []Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.history.last(n)
}

// SubscribeOptions configures one subscription.
type SubscribeOptions struct {
	// QueueSize bounds the events held for this subscriber. If zero, the
	// bus's QueueSize.
	QueueSize int
	// Passive lists kinds this subscriber takes when they are published
	// but does not ask for: [Bus.Wants] does not count it for them, so a
	// publisher may leave them unpublished when no other subscriber asks
	// (the manager's tool_call of a call that succeeded, for example).
	// Those that are published are still delivered. If nil, the
	// subscriber asks for every kind.
	Passive []Kind
}

// Subscribe registers a new subscriber that receives every event published
// from now on. The caller owns the subscription and must Close it.
func (b *Bus) Subscribe(opts SubscribeOptions) *Subscription {
	size := opts.QueueSize
	if size <= 0 {
		size = b.queueSize
	}
	s := &Subscription{
		bus:     b,
		queue:   newRing(size),
		notify:  make(chan struct{}, 1),
		now:     b.now,
		passive: slices.Clone(opts.Passive),
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		s.closed = true
		return s
	}
	b.subs[s] = struct{}{}
	b.rebuildInterestLocked()
	return s
}

// Close stops the bus. Subscribers first receive what is already queued,
// then [ErrClosed]. Close is idempotent.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	b.closed = true
	for s := range b.subs {
		s.closeQueue()
	}
	clear(b.subs)
	b.rebuildInterestLocked()
}

func (b *Bus) unsubscribe(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		b.rebuildInterestLocked()
	}
}
