package inflight

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// Requests holds the cancel functions of a server's requests, from the
// start of their wait for a session to their end, so that a drain that
// runs out (disposal, disable) abandons exactly the requests there are
// then, and each can tell afterwards that it was abandoned rather than
// cancelled by its caller. The zero value is ready to use.
type Requests struct {
	// owner answers for the owner of a per-client session between its
	// requests: the answerer its last request gave.
	owner atomic.Pointer[ask.Candidate]

	mu sync.Mutex
	// mu guards the following.
	next    uint64
	live    map[uint64]request
	closing bool // the server is being removed: requests are abandoned as they start
}

type request struct {
	cancel    context.CancelFunc
	abandoned bool
	answerer  *ask.Candidate // who answers what the server asks meanwhile; nil if the caller gave none
}

// Add registers a request's cancel function and returns its id. Once the
// server is closing (Abandon(true)), the request is abandoned at once.
func (r *Requests) Add(cancel context.CancelFunc) uint64 {
	r.mu.Lock()
	if r.live == nil {
		r.live = make(map[uint64]request)
	}
	r.next++
	id, closing := r.next, r.closing
	r.live[id] = request{cancel: cancel, abandoned: closing}
	r.mu.Unlock()
	if closing {
		cancel()
	}
	return id
}

// End forgets request id and cancels it (releasing its context).
func (r *Requests) End(id uint64, cancel context.CancelFunc) {
	r.mu.Lock()
	delete(r.live, id)
	r.mu.Unlock()
	cancel()
}

// AnswerBy records who answers what the server asks while request id is
// in flight. With owner (the session is one client's own), c also answers
// for that client between its requests, until its next request gives
// another.
func (r *Requests) AnswerBy(id uint64, c *ask.Candidate, owner bool) {
	r.mu.Lock()
	if q, ok := r.live[id]; ok {
		q.answerer = c
		r.live[id] = q
	}
	r.mu.Unlock()
	if owner {
		r.owner.Store(c)
	}
}

// Answerers lists who may answer what the server asks outside the
// context of one request, in the order to ask them: the answerers of the
// requests in flight that the question can be shown to belong to, the
// most recent first, and then the owner's; and how many clients with
// requests in flight were left out.
//
// On a shared session a question cannot say which request it belongs to:
// it may come after the request that led to it ended, while another
// client's is in flight, and one client's user must never see another's
// form, nor one client's roots go to another's request. A request's
// answerer is asked only when the session is its client's own (it has an
// owner), when its client is the only one the host serves
// (ask.SoleClient), or, when the server is trusted to ask only about the
// requests in flight, when they are all one client's.
func (r *Requests) Answerers(trusted bool) (out []ask.Candidate, withheld int) {
	type entry struct {
		id uint64
		c  *ask.Candidate
	}
	var list []entry
	r.mu.Lock()
	for id, q := range r.live {
		if q.answerer != nil {
			list = append(list, entry{id, q.answerer})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(list, func(a, b entry) int { return cmp.Compare(b.id, a.id) })
	owner := r.owner.Load()
	oneClient := true
	for _, e := range list {
		oneClient = oneClient && e.c.Client == list[0].c.Client
	}
	left := map[string]bool{}
	for _, e := range list {
		sole, ok := e.c.Answerer.(ask.SoleClient)
		if owner != nil || trusted && oneClient || ok && sole.SoleClient() {
			out = append(out, *e.c)
		} else {
			left[e.c.Client] = true
		}
	}
	if owner != nil {
		out = append(out, *owner)
	}
	return out, len(left)
}

// Abandoned reports whether request id was abandoned.
func (r *Requests) Abandoned(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live[id].abandoned
}

// Abandon cancels every request there is now. With closing, it also
// abandons every request that starts from now on (the server is being
// removed).
func (r *Requests) Abandon(closing bool) {
	var cancels []context.CancelFunc
	r.mu.Lock()
	r.closing = r.closing || closing
	for id, q := range r.live {
		if !q.abandoned {
			q.abandoned = true
			r.live[id] = q
			cancels = append(cancels, q.cancel)
		}
	}
	r.mu.Unlock()
	for _, cancel := range cancels { // cancelling runs AfterFuncs: not under the lock
		cancel()
	}
}
