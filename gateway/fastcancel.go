package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
)

// A fast call ends early when its client cancels it (notifications/
// cancelled for its request id) or when its session ends. The session
// keeps its fast calls for both: one watch of its context (registered
// as the session is made, see endFast) ends them all, rather than one
// per call on a context every call of the session shares.

// errCallCancelled is why a fast call ends when its client sends
// notifications/cancelled for it.
var errCallCancelled = errors.New("the client cancelled the call")

// fastKey is how a request id is looked up: its JSON, trimmed.
func fastKey(id json.RawMessage) string { return string(bytes.TrimSpace(id)) }

// trackFast lets the client cancel the fast call with id until the
// function it returns is called: cancel cancels it and reports whether
// it did (false: the cancellation is the go-sdk's to serve). If the
// session ends meanwhile (or has ended), end is called with why, unless
// it is nil (a call whose context follows the session's already).
func (s *session) trackFast(id json.RawMessage, cancel func(cause error) bool, end context.CancelCauseFunc) func() {
	key := fastKey(id)
	s.mu.Lock()
	if s.fast == nil {
		s.fast = map[string]func(cause error) bool{}
		s.fastEnds = map[uint64]context.CancelCauseFunc{}
	}
	s.fast[key] = cancel
	s.fastSeen++
	n := s.fastSeen
	if end != nil {
		s.fastEnds[n] = end
	}
	s.mu.Unlock()
	if cause := context.Cause(s.ctx); cause != nil && end != nil {
		end(cause) // endFast may have run before the call was tracked
	}
	return func() {
		s.mu.Lock()
		delete(s.fast, key)
		delete(s.fastEnds, n)
		s.mu.Unlock()
	}
}

// cancelFast cancels the client's fast call with id, and reports whether
// there was one.
func (s *session) cancelFast(id json.RawMessage) bool {
	s.mu.Lock()
	cancel := s.fast[fastKey(id)]
	s.mu.Unlock()
	if cancel == nil {
		return false
	}
	return cancel(errCallCancelled)
}

// endFast ends the session's fast calls with why the session ended; it
// runs once the session's context has.
func (s *session) endFast() {
	cause := context.Cause(s.ctx)
	s.mu.Lock()
	ends := make([]context.CancelCauseFunc, 0, len(s.fastEnds))
	for _, end := range s.fastEnds {
		ends = append(ends, end)
	}
	s.mu.Unlock()
	for _, end := range ends {
		end(cause)
	}
}
