package manager

import (
	"fmt"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
)

// slots caps the connections held at once across the manager
// ([Options.MaxConnections]). A connection holds its slot from the start of
// its attempt until it is closed: a failed attempt, an idle close, a lost
// session or a removal gives it back. Waiting servers queue on the channel
// (the runtime wakes blocked senders in order).
type slots struct {
	limit int
	held  chan struct{}
}

// newSlots returns the cap for limit connections; nil (no cap) when limit
// is zero or less.
func newSlots(limit int) *slots {
	if limit <= 0 {
		return nil
	}
	return &slots{limit: limit, held: make(chan struct{}, limit)}
}

// tryTake takes a slot if one is free.
func (sl *slots) tryTake() bool {
	select {
	case sl.held <- struct{}{}:
		return true
	default:
		return false
	}
}

// giver returns the function that gives one taken slot back; calling it
// again does nothing.
func (sl *slots) giver() func() {
	return sync.OnceFunc(func() { <-sl.held })
}

// limitReached is the explanation of a server kept waiting by the cap,
// as its status and a waiting caller's CONNECTION_LIMIT error say it.
func (sl *slots) limitReached() string {
	return fmt.Sprintf("max connections (%d) reached", sl.limit)
}

// noSlot is the release of a connection that holds no slot.
func noSlot() {}

// takeSlot waits for a connection slot before attempt n. Without a cap it
// returns at once. When the cap is reached the server says so (state
// connecting, Status.Waiting, a connecting event with "waiting") and waits
// in line until a slot is free, the server is removed or disabled (ok
// false). The returned function gives the slot back.
func (s *supervisor) takeSlot(n int) (release func(), ok bool) {
	sl := s.m.slots
	if sl == nil {
		return noSlot, true
	}
	if kept := s.slot; kept != nil {
		s.slot = nil
		return kept, true
	}
	if sl.tryTake() {
		return sl.giver(), true
	}
	why := sl.limitReached()
	s.transition(StateConnecting, func(snap *snapshot) {
		snap.status.NextAttempt = time.Time{}
		snap.status.Waiting = why
	}, events.KindConnecting, events.Fields{"attempt": n, "waiting": why})
	for {
		select {
		case sl.held <- struct{}{}:
			return sl.giver(), true
		case <-s.ctx.Done():
			return nil, false
		case <-s.kick:
			if s.disabled.Load() {
				return nil, false
			}
		}
	}
}

// keepSlot takes c's slot over for the supervisor's next attempt, so that
// closing c to replace it at once (mcp_reconnect, an expired HTTP session)
// does not hand the slot to a waiting server.
func (s *supervisor) keepSlot(c *conn) {
	if c.release != nil && s.m.slots != nil {
		s.dropSlot()
		s.slot, c.release = c.release, nil
	}
}

// dropSlot gives back a kept slot, if any: the next attempt is not
// immediate after all (backoff, disabled, removed).
func (s *supervisor) dropSlot() {
	if s.slot != nil {
		s.slot()
		s.slot = nil
	}
}
