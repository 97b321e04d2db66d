package manager

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/manager/ask"
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

// inflight holds the cancel functions of a server's requests, from the
// start of their wait for a session to their end, so that a drain that
// runs out (disposal, disable) abandons exactly the requests there are
// then, and each can tell afterwards that it was abandoned rather than
// cancelled by its caller.
type inflight struct {
	mu sync.Mutex
	// mu guards the following.
	next    uint64
	live    map[uint64]inflightReq
	closing bool // the server is being removed: requests are abandoned as they start
}

type inflightReq struct {
	cancel    context.CancelFunc
	abandoned bool
	answerer  *ask.Candidate // who answers what the server asks meanwhile; nil if the caller gave none
}

// add registers a request's cancel function and returns its id.
func (f *inflight) add(cancel context.CancelFunc) uint64 {
	f.mu.Lock()
	if f.live == nil {
		f.live = make(map[uint64]inflightReq)
	}
	f.next++
	id, closing := f.next, f.closing
	f.live[id] = inflightReq{cancel: cancel, abandoned: closing}
	f.mu.Unlock()
	if closing {
		cancel()
	}
	return id
}

// end forgets request id and cancels it (releasing its context).
func (f *inflight) end(id uint64, cancel context.CancelFunc) {
	f.mu.Lock()
	delete(f.live, id)
	f.mu.Unlock()
	cancel()
}

// answerBy records who answers what the server asks while request id is
// in flight.
func (f *inflight) answerBy(id uint64, c *ask.Candidate) {
	f.mu.Lock()
	if r, ok := f.live[id]; ok {
		r.answerer = c
		f.live[id] = r
	}
	f.mu.Unlock()
}

// answerers lists the answerers of the requests in flight, the most
// recent first.
func (f *inflight) answerers() []ask.Candidate {
	type entry struct {
		id uint64
		c  *ask.Candidate
	}
	var list []entry
	f.mu.Lock()
	for id, r := range f.live {
		if r.answerer != nil {
			list = append(list, entry{id, r.answerer})
		}
	}
	f.mu.Unlock()
	slices.SortFunc(list, func(a, b entry) int { return cmp.Compare(b.id, a.id) })
	out := make([]ask.Candidate, len(list))
	for i, e := range list {
		out[i] = *e.c
	}
	return out
}

// abandoned reports whether request id was abandoned.
func (f *inflight) abandoned(id uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live[id].abandoned
}

// abandon cancels every request there is now. With closing, it also
// abandons every request that starts from now on (the server is being
// removed).
func (f *inflight) abandon(closing bool) {
	var cancels []context.CancelFunc
	f.mu.Lock()
	f.closing = f.closing || closing
	for id, r := range f.live {
		if !r.abandoned {
			r.abandoned = true
			f.live[id] = r
			cancels = append(cancels, r.cancel)
		}
	}
	f.mu.Unlock()
	for _, cancel := range cancels { // cancelling runs AfterFuncs: not under the lock
		cancel()
	}
}
