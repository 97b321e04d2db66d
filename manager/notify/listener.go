package notify

import (
	"context"
	"sync"
	"time"
)

// Listener is one consumer's queue of notices. Create it with
// [Hub.Listen].
type Listener struct {
	hub      *Hub
	size     int
	lossless bool
	stall    time.Duration
	ready    chan struct{} // capacity 1: "the queue changed", for the consumer

	mu sync.Mutex
	// mu guards the following.
	queue []Notice
	head  int // queue[head:] are waiting
	// lost counts, per session, what the queue could not take since the
	// last notice it did take; they are queued before the next one.
	lost map[Origin]*Lost
	// lostOrder is the keys of lost in the order of their first loss.
	lostOrder []Origin
	// stalled is set when the consumer took nothing for a stall: nothing
	// is queued (all is counted lost) until it has emptied the queue.
	stalled bool
	// taken counts the notices the consumer took: publishers waiting for
	// room watch it for progress.
	taken uint64
	// room is closed and replaced when the consumer takes a notice while
	// publishers wait (waiting > 0).
	room    chan struct{}
	waiting int
	closed  bool // by the consumer: queue discarded
	ended   bool // by the hub: drain, then ErrClosed
}

// deliver queues n, waiting for room when the listener is lossless and n
// is worth waiting for; what it cannot queue it counts lost.
func (l *Listener) deliver(ctx context.Context, n Notice) {
	var (
		seen  uint64    // l.taken when the stall clock last started
		since time.Time // when it started; zero until a first wait
	)
	for {
		l.mu.Lock()
		if l.closed || l.ended {
			l.mu.Unlock()
			return
		}
		if !l.stalled && len(l.queue)-l.head < l.size {
			l.pushLocked(n)
			l.mu.Unlock()
			l.wake()
			return
		}
		if !l.lossless || !n.waits() || l.stalled || ctx.Err() != nil {
			l.loseLocked(n)
			l.mu.Unlock()
			l.wake()
			return
		}
		taken, room := l.taken, l.room
		l.waiting++
		l.mu.Unlock()

		now := time.Now()
		if since.IsZero() || taken != seen {
			seen, since = taken, now // the consumer moved: the stall clock starts again
		}
		left := l.stall - now.Sub(since)
		if left > 0 {
			t := time.NewTimer(left)
			select {
			case <-room:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		l.mu.Lock()
		l.waiting--
		if left <= 0 && l.taken == seen {
			l.stalled = true
		}
		l.mu.Unlock()
	}
}

// pushLocked queues n after what was lost before it.
func (l *Listener) pushLocked(n Notice) {
	if len(l.lostOrder) > 0 {
		for _, o := range l.lostOrder {
			l.appendLocked(*l.lost[o])
		}
		l.lostOrder = l.lostOrder[:0]
		clear(l.lost)
	}
	l.appendLocked(n)
}

func (l *Listener) appendLocked(n Notice) {
	if l.head > 0 && len(l.queue) == cap(l.queue) {
		// Slide what waits to the front rather than grow.
		k := copy(l.queue, l.queue[l.head:])
		clear(l.queue[k:])
		l.queue, l.head = l.queue[:k], 0
	}
	l.queue = append(l.queue, n)
}

// loseLocked counts n lost for its session.
func (l *Listener) loseLocked(n Notice) {
	o := n.From()
	o.Time = time.Time{}
	lost := l.lost[o]
	if lost == nil {
		if l.lost == nil {
			l.lost = make(map[Origin]*Lost)
		}
		lost = &Lost{Origin: n.From()}
		l.lost[o] = lost
		l.lostOrder = append(l.lostOrder, o)
	}
	lost.count(n)
}

func (l *Listener) wake() {
	select {
	case l.ready <- struct{}{}:
	default:
	}
}

// Ready is signalled (coalesced, never blocking) whenever the queue
// changes. Wait on it in a select, then drain with TryNext.
func (l *Listener) Ready() <-chan struct{} { return l.ready }

// TryNext returns the next notice without waiting; ok is false when there
// is none. What was lost comes as [Lost] notices where it went missing.
// After the hub closed and the queue is drained, or after Close, err is
// [ErrClosed].
func (l *Listener) TryNext() (n Notice, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false, ErrClosed
	}
	if l.head < len(l.queue) {
		n = l.queue[l.head]
		l.queue[l.head] = nil
		l.head++
		if l.head == len(l.queue) {
			l.queue, l.head = l.queue[:0], 0
		}
		l.tookLocked()
		return n, true, nil
	}
	if len(l.lostOrder) > 0 {
		o := l.lostOrder[0]
		n = *l.lost[o]
		delete(l.lost, o)
		l.lostOrder = l.lostOrder[1:]
		l.tookLocked()
		return n, true, nil
	}
	l.stalled = false // emptied: publishers may wait for it again
	if l.ended {
		return nil, false, ErrClosed
	}
	return nil, false, nil
}

// Queued is how many notices TryNext would hand out now without waiting
// (each Lost notice counting one): a consumer that takes that many has
// taken everything published before it asked.
func (l *Listener) Queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue) - l.head + len(l.lostOrder)
}

// tookLocked records progress and wakes publishers waiting for room.
func (l *Listener) tookLocked() {
	l.taken++
	if l.waiting > 0 {
		close(l.room)
		l.room = make(chan struct{})
	}
}

// Next waits for the next notice, as TryNext returns them, or ctx's end.
func (l *Listener) Next(ctx context.Context) (Notice, error) {
	for {
		n, ok, err := l.TryNext()
		if ok || err != nil {
			return n, err
		}
		select {
		case <-l.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close unsubscribes the listener and discards what it holds; publishers
// waiting for it return. Close is idempotent.
func (l *Listener) Close() {
	l.hub.remove(l)
	l.end(true)
}

// end stops deliveries: discard (Close) or drain first (the hub closed).
func (l *Listener) end(discard bool) {
	l.mu.Lock()
	if discard {
		l.closed = true
		clear(l.queue)
		l.queue, l.head = nil, 0
		l.lost, l.lostOrder = nil, nil
	}
	l.ended = true
	close(l.room)
	l.room = make(chan struct{})
	l.mu.Unlock()
	l.wake()
}
