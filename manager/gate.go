package manager

import (
	"context"
	"sync"
)

// gate counts the requests using a server's session, so the supervisor
// can close the session only when none is in flight: at once for the idle
// timeout (closeIf), or after draining them for disposal (drain).
type gate struct {
	mu sync.Mutex
	// mu guards the following.
	n      int           // requests in flight
	closed bool          // no new requests may enter
	zero   chan struct{} // closed when n drops to 0; nil unless drain waits
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
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
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

// closeIf closes the gate if no request is in flight and ok says so,
// reporting whether it did. ok runs under the gate's lock: no request
// enters or leaves meanwhile.
func (g *gate) closeIf(ok func() bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n > 0 || !ok() {
		return false
	}
	g.closed = true
	return true
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
