package manager

import (
	"runtime"
	"slices"
	"sync"
	"time"
)

// slots caps the connections held at once across the manager
// ([Options.MaxConnections]). A connection holds its slot from the start of
// its attempt until it is closed: a failed attempt, an idle close, a lost
// session or a removal gives it back. Servers beyond the cap wait in one
// line, served in order: [Manager.Add] joins it, so servers declared
// together connect in the order they were declared.
type slots struct {
	limit   int
	why     WaitReason // what a server in line waits for
	reached string     // why.words(limit): the same, as its status says it
	mu      sync.Mutex
	// mu guards the following.
	held int       // slots granted and not given back
	line []*ticket // waiting for a slot, first in line first
}

// newSlots returns a cap of limit holders at once, whose waiting servers
// wait for why; nil (no cap) when limit is zero or less. The same line
// serves the connections held ([Options.MaxConnections], WaitSlot) and the
// attempts in flight ([Options.MaxConnecting], WaitTurn).
func newSlots(limit int, why WaitReason) *slots {
	if limit <= 0 {
		return nil
	}
	return &slots{limit: limit, why: why, reached: why.words(limit)}
}

// ticket is one server's place in line for a slot, then the slot itself
// once granted. The nil ticket (no cap) gives back nothing.
type ticket struct {
	sl      *slots
	granted chan struct{} // closed when the slot is this ticket's
	once    sync.Once
}

// take joins the line: the ticket is granted at once if a slot is free
// and nobody waits before it.
func (sl *slots) take() *ticket {
	if sl == nil {
		return nil
	}
	t := &ticket{sl: sl, granted: make(chan struct{})}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.held < sl.limit && len(sl.line) == 0 {
		sl.held++
		close(t.granted)
	} else {
		sl.line = append(sl.line, t)
	}
	return t
}

// ready reports whether the ticket holds its slot.
func (t *ticket) ready() bool {
	select {
	case <-t.granted:
		return true
	default:
		return false
	}
}

// giveBack leaves the line, or gives the slot to the first in line if the
// ticket held it. Calling it again does nothing.
func (t *ticket) giveBack() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		sl := t.sl
		sl.mu.Lock()
		defer sl.mu.Unlock()
		if i := slices.Index(sl.line, t); i >= 0 {
			sl.line = slices.Delete(sl.line, i, i+1)
			return
		}
		if len(sl.line) > 0 {
			next := sl.line[0]
			// The line shrinks from its front without copying the rest:
			// thousands may wait in it.
			sl.line[0] = nil
			sl.line = sl.line[1:]
			close(next.granted) // the slot passes on: held is unchanged
			return
		}
		sl.held--
	})
}

// takeSlot waits for a connection slot before attempt n. Without a cap it
// returns at once. When the cap is reached the server says so (state
// connecting, Status.Waiting, a connecting event with "waiting") and waits
// in line until a slot is free, the server is removed or disabled (ok
// false). An idle server woken by callers goes back to idle, and out of
// the line, once none of them is waiting any more. The ticket holds the
// slot; giving it back frees it.
func (s *supervisor) takeSlot(n int) (t *ticket, ok bool) {
	defer func() { s.woken = false }()
	sl := s.m.slots
	if sl == nil {
		return nil, true
	}
	t, s.slot = s.slot, nil
	for {
		if t == nil {
			t = sl.take()
		}
		if t.ready() {
			return t, true
		}
		s.announceWaiting(n, sl)
		switch s.awaitGrant(t, func() bool { return s.woken && s.wanted.Load() == 0 }) {
		case granted:
			return t, true
		case cancelled:
			return nil, false
		}
		t.giveBack() // unwanted: back to idle
		t = nil
		s.transition(StateIdle, nil, Idle{Reason: "no caller is waiting for a connection slot any more"})
		s.parkIdle()
		if s.ctx.Err() != nil || s.disabled.Load() {
			return nil, false
		}
	}
}

// keepSlot takes c's slot over for the supervisor's next attempt, so that
// closing c to replace it at once (mcp_reconnect, an expired HTTP session)
// does not hand the slot to a waiting server.
func (s *supervisor) keepSlot(c *conn) {
	if c.slot != nil {
		s.dropSlot()
		s.slot, c.slot = c.slot, nil
	}
}

// dropSlot gives back a kept slot or place in line, if any: the next
// attempt is not immediate after all (backoff, disabled, removed).
func (s *supervisor) dropSlot() {
	s.slot.giveBack()
	s.slot = nil
	s.dropTurn()
}

// announceWaiting publishes that attempt n waits in connecting, in the
// line of sl (a cap on connections or on attempts in flight).
func (s *supervisor) announceWaiting(n int, sl *slots) {
	s.transition(StateConnecting, func(snap *snapshot) {
		snap.status.NextAttempt = time.Time{}
		snap.status.WaitingFor = sl.why
		snap.status.Waiting = sl.reached
	}, Connecting{Attempt: n, Waiting: sl.reached})
}

// DefaultMaxConnecting is the cap on connection attempts in flight when
// [Options.MaxConnecting] is 0: four per core (GOMAXPROCS), at least 8 and
// at most 64. An attempt spends most of its time waiting for a process to
// start and answer, so a few per core keep the machine busy while many
// healthy servers start; the floor lets a small machine start a typical
// config all at once, and the ceiling bounds the processes, descriptors
// and threads that servers which never answer can hold, however many cores
// there are.
func DefaultMaxConnecting() int {
	return min(max(4*runtime.GOMAXPROCS(0), 8), 64)
}

// takeTurn waits for a turn to make attempt n, under the cap on attempts in
// flight. Without a cap it returns at once. When the cap is reached the
// server says so (state connecting, Status.Waiting, a connecting event with
// "waiting") and waits in line until an attempt ahead of it ends, or the
// server is removed or disabled (ok false, the place in line given back).
// The ticket is the turn; giving it back lets the next attempt start.
func (s *supervisor) takeTurn(n int) (t *ticket, ok bool) {
	sl := s.m.attempts
	if sl == nil {
		return nil, true
	}
	t, s.turn = s.turn, nil
	if t == nil {
		t = sl.take()
	}
	if t.ready() {
		return t, true
	}
	s.announceWaiting(n, sl)
	if s.awaitGrant(t, func() bool { return false }) == granted {
		return t, true
	}
	return nil, false
}

// grant is how a wait in line ended.
type grant int

const (
	granted   grant = iota
	cancelled       // removed or disabled meanwhile: the place is given back
	unwanted        // nobody needs the attempt any more (the place is kept)
)

// awaitGrant waits until t is granted, the server is removed or disabled
// (the place given back), or, checked whenever the supervisor is kicked,
// stop says the attempt is no longer wanted.
func (s *supervisor) awaitGrant(t *ticket, stop func() bool) grant {
	for !stop() {
		select {
		case <-t.granted:
			if s.ctx.Err() != nil || s.disabled.Load() { // no attempt after all
				t.giveBack()
				return cancelled
			}
			return granted
		case <-s.ctx.Done():
			t.giveBack()
			return cancelled
		case <-s.kick:
			if s.disabled.Load() {
				t.giveBack()
				return cancelled
			}
		}
	}
	return unwanted
}

// dropTurn gives back a place in the line of attempts taken ahead of time
// (at Add), if any: the first attempt is not made after all.
func (s *supervisor) dropTurn() {
	s.turn.giveBack()
	s.turn = nil
}
