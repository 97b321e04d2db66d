package manager

import (
	"context"
	"sync"
)

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
