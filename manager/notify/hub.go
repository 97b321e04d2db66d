package notify

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by [Listener.Next] and [Listener.TryNext] once the
// hub is closed and the listener's queue is drained, or after the listener
// is closed.
var ErrClosed = errors.New("notify: closed")

// Hub hands each notice published to every listener. Create it with
// [NewHub]; the zero value is not usable.
type Hub struct {
	// listeners is the current set, replaced (never modified) under mu,
	// so that Publish reads it without a lock.
	listeners atomic.Pointer[[]*Listener]

	mu sync.Mutex
	// mu guards closed and the replacement of listeners.
	closed bool
}

// NewHub returns an open hub with no listeners.
func NewHub() *Hub {
	h := &Hub{}
	h.listeners.Store(&[]*Listener{})
	return h
}

// ListenOptions configures one listener.
type ListenOptions struct {
	// QueueSize bounds the notices waiting for the consumer. If zero, 4096.
	QueueSize int
	// Lossless makes publishers of resource updates wait for room in a
	// full queue while the consumer keeps taking notices, instead of
	// counting them lost.
	Lossless bool
	// Stall is how long a lossless listener's consumer may take nothing
	// from a full queue before its publishers stop waiting for it. If
	// zero, 5s.
	Stall time.Duration
}

// Listen registers a new listener that receives every notice published
// from now on. The caller owns it and must Close it.
func (h *Hub) Listen(opts ListenOptions) *Listener {
	if opts.QueueSize <= 0 {
		opts.QueueSize = 4096
	}
	if opts.Stall <= 0 {
		opts.Stall = 5 * time.Second
	}
	l := &Listener{hub: h, size: opts.QueueSize, lossless: opts.Lossless, stall: opts.Stall,
		ready: make(chan struct{}, 1), room: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		l.closed = true
		return l
	}
	list := append(slices.Clone(*h.listeners.Load()), l)
	h.listeners.Store(&list)
	return l
}

// Publish hands n to every listener. For a lossless listener whose queue
// is full it waits, for a resource update, until there is
// room, the listener stalls or closes, or ctx ends (then n is counted lost
// for that listener). It never waits otherwise. Publishing on a closed hub
// does nothing.
func (h *Hub) Publish(ctx context.Context, n Notice) {
	for _, l := range *h.listeners.Load() {
		l.deliver(ctx, n)
	}
}

// Close stops the hub: listeners hand out what they hold, then
// [ErrClosed]; publishers waiting for room return. Close is idempotent.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	list := *h.listeners.Swap(&[]*Listener{})
	h.mu.Unlock()
	for _, l := range list {
		l.end(false)
	}
}

func (h *Hub) remove(l *Listener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := slices.DeleteFunc(slices.Clone(*h.listeners.Load()), func(x *Listener) bool { return x == l })
	h.listeners.Store(&list)
}
