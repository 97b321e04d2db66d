package events

import (
	"context"
	"sync"
	"time"
)

// Subscription is one subscriber's view of the bus: a bounded queue that
// counts what overflowed. Create it with [Bus.Subscribe].
type Subscription struct {
	bus    *Bus
	notify chan struct{} // capacity 1: "the queue changed"
	now    func() time.Time
	// passive is the kinds it takes only passively; the bus's mu guards
	// it.
	passive []Kind

	mu sync.Mutex
	// mu guards the following.
	queue     ring
	missed    uint64 // dropped since the last lagged notice
	delivered uint64
	lost      uint64 // total dropped, for accounting
	closed    bool
}

// deliver appends e, dropping the oldest queued event if full. It is called
// by the bus with the bus lock held and never blocks.
func (s *Subscription) deliver(e Event) {
	s.mu.Lock()
	if s.queue.push(e) {
		s.missed++
		s.lost++
	}
	s.mu.Unlock()
	s.wake()
}

func (s *Subscription) closeQueue() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wake()
}

func (s *Subscription) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// TryRecv returns the next event without waiting. ok is false when nothing
// is queued. Like Recv, it reports overflow as a [KindLagged] event first.
func (s *Subscription) TryRecv() (e Event, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.missed > 0 {
		n := s.missed
		s.missed = 0
		return Event{Time: s.now(), Kind: KindLagged, Fields: Fields{"missed": n}}, true, nil
	}
	if e, ok := s.queue.pop(); ok {
		s.delivered++
		return e, true, nil
	}
	if s.closed {
		return Event{}, false, ErrClosed
	}
	return Event{}, false, nil
}

// Recv waits for the next event. If events were dropped because this
// subscriber fell behind, Recv first returns a [KindLagged] event whose
// "missed" field (uint64) is the exact number dropped, then continues with
// the oldest event still queued. After the bus closes and the queue is
// drained, Recv returns [ErrClosed]; if ctx ends first, ctx's error.
func (s *Subscription) Recv(ctx context.Context) (Event, error) {
	for {
		e, ok, err := s.TryRecv()
		if ok || err != nil {
			return e, err
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// Ready is signalled (non-blocking, coalesced) whenever the queue changes.
// Use it to wait for events in a select, then drain with TryRecv.
func (s *Subscription) Ready() <-chan struct{} { return s.notify }

// Stats reports how many events this subscription has handed out and how
// many it dropped. delivered+dropped+queued equals the events published
// since it subscribed.
func (s *Subscription) Stats() (delivered, dropped uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered, s.lost
}

// Close unsubscribes. Events already queued are discarded. Close is
// idempotent.
func (s *Subscription) Close() {
	s.bus.unsubscribe(s)
	s.mu.Lock()
	s.closed = true
	s.missed = 0 // a pending lag notice is discarded with the queue
	for s.queue.n > 0 {
		s.queue.pop()
	}
	s.mu.Unlock()
	s.wake()
}
