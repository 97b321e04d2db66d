package manager

import (
	"runtime"
)

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
	s.announceWaiting(n, sl.limitReached())
	for {
		select {
		case <-t.granted:
			if s.ctx.Err() != nil || s.disabled.Load() { // no attempt after all
				t.giveBack()
				return nil, false
			}
			return t, true
		case <-s.ctx.Done():
			t.giveBack()
			return nil, false
		case <-s.kick:
			if s.disabled.Load() {
				t.giveBack()
				return nil, false
			}
		}
	}
}

// dropTurn gives back a place in the line of attempts taken ahead of time
// (at Add), if any: the first attempt is not made after all.
func (s *supervisor) dropTurn() {
	s.turn.giveBack()
	s.turn = nil
}
