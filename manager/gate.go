package manager

import (
	"context"
	"sync"
	"time"
)

// gate counts the requests using a server's session, so the supervisor
// can close the session only when none is in flight: at once for the idle
// timeout (closeIf), or after draining them for disposal (drain).
type gate struct {
	mu sync.Mutex
	// mu guards the following.
	n        int           // requests in flight
	closed   bool          // no new requests may enter
	zero     chan struct{} // closed when n drops to 0; nil unless drain waits
	lastExit time.Time     // when a request last left
}

// enter admits one request, unless the gate is closed.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

// exit ends a request admitted by enter.
func (g *gate) exit() {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	g.lastExit = now
	if g.n == 0 && g.zero != nil {
		close(g.zero)
		g.zero = nil
	}
}

// inFlight is how many requests are in flight.
func (g *gate) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// closeIfIdle closes the gate if no request is in flight and none has
// left for limit, counting from since at the earliest (when the session
// came up). Otherwise it returns how long until that could be so (limit
// while requests are in flight: the end of each is activity). The check
// and the close are one step under the lock, so a request that leaves
// meanwhile is seen.
func (g *gate) closeIfIdle(since time.Time, limit time.Duration) (closed bool, rest time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n > 0 {
		return false, limit
	}
	last := since
	if g.lastExit.After(last) {
		last = g.lastExit
	}
	if rest = limit - time.Since(last); rest > 0 {
		return false, rest
	}
	g.closed = true
	return true, 0
}

// drain closes the gate and waits until the requests in flight have
// finished or ctx ends. It reports whether they all finished.
func (g *gate) drain(ctx context.Context) bool {
	g.mu.Lock()
	g.closed = true
	if g.n == 0 {
		g.mu.Unlock()
		return true
	}
	if g.zero == nil {
		g.zero = make(chan struct{})
	}
	zero := g.zero
	g.mu.Unlock()
	select {
	case <-zero:
		return true
	case <-ctx.Done():
		return false
	}
}

// open admits requests again (a new session is up).
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = false
}
