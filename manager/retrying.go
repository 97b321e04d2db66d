package manager

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/endpoint"
	"github.com/mcpvisor/mcpvisor/internal/proc"
	"github.com/mcpvisor/mcpvisor/manager/internal/retry"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

// How the supervisor goroutine acts on its retry policy (package retry
// decides; this file waits, attempts and publishes).

// connectLoop makes attempts until one succeeds, paced by the retry
// policy. It returns nil when the server is to be removed or disabled.
func (s *supervisor) connectLoop() *conn {
	for s.ctx.Err() == nil && !s.disabled.Load() {
		probe := false
		if s.policy.Circuit() == retry.Open {
			endWait := s.trace.circuitWait(s.policy.Failures(), s.policy.ProbeAt())
			ok := s.pause(s.policy.ProbeAt(), false)
			endWait()
			if !ok {
				return nil
			}
			if s.policy.Probe() { // not reset by mcp_reconnect meanwhile
				s.emit(CircuitChanged{From: CircuitOpen, To: CircuitHalfOpen})
				probe = true
			}
		}
		n := s.policy.Failures() + 1
		slot, ok := s.takeSlot(n)
		if !ok {
			return nil
		}
		turn, ok := s.takeTurn(n)
		if !ok {
			slot.giveBack()
			return nil
		}
		c, err := s.attempt(n, probe)
		turn.giveBack() // connected or not, the attempt is over
		if err == nil {
			c.attempt = n
			c.slot = slot
			return c
		}
		slot.giveBack()
		if s.ctx.Err() != nil {
			return nil
		}
		if !s.failed(err, retry.Attempt) {
			return nil
		}
	}
	return nil
}

// Terminal outcomes: failures that retrying on the backoff schedule cannot
// fix, so the server stops retrying and waits for a person (a login, new
// credentials, a program installed) and a reconnect. errors.Is finds them
// in the chain of what caused the failure, and of a request's error while
// the server waits.
var (
	// ErrUnauthorized: the server refused the credentials it was given, or
	// wants a login (state unauthorized).
	ErrUnauthorized = endpoint.ErrUnauthorized
	// ErrCannotStart: a stdio server's program or working directory is
	// not there (state failed); see [Spec.Startable].
	ErrCannotStart = proc.ErrCannotStart
)

// outcome is the terminal outcome whose sentinel is in cause's chain, or
// nil if retrying may help.
func outcome(cause error) error {
	switch {
	case errors.Is(cause, ErrUnauthorized):
		return ErrUnauthorized
	case errors.Is(cause, ErrCannotStart):
		return ErrCannotStart
	}
	return nil
}

// failed records a failed attempt or a lost session (what says which)
// and waits as the retry policy decides (see package retry: with the
// defaults, five quick retries, then the circuit opens). It reports
// whether to attempt again (false: the server is being removed or
// disabled).
func (s *supervisor) failed(cause error, what retry.Failure) bool {
	cause = s.hide(cause)
	s.dropSlot()
	s.reiniting = false
	if outcome(cause) != nil {
		what = retry.Terminal
	}
	d := s.policy.Failed(time.Now(), what)
	n := d.Failures
	switch d.Verdict {
	case retry.GiveUp:
		return s.stopRetrying(cause, d)
	case retry.Opened:
		s.transition(StateOpen, func(snap *snapshot) {
			snap.status.Attempts = n
			snap.status.LastError = cause.Error()
			snap.status.NextAttempt = d.At
			snap.status.Remedy = Remedy{Kind: RemedyWait, Server: s.name, At: d.At}
		}, CircuitChanged{From: Circuit(d.From), To: CircuitOpen, Failures: n, ProbeIn: d.Delay, Error: cause.Error()})
		return true // connectLoop waits for the probe
	}
	// After a lost session (proven or not) the server is reconnecting:
	// callers that fail fast still wait for this attempt.
	lostSession := what != retry.Attempt
	s.transition(StateBackoff, func(snap *snapshot) {
		snap.reconnecting = lostSession
		snap.status.Attempts = n
		snap.status.LastError = cause.Error()
		snap.status.NextAttempt = d.At
		snap.status.Remedy = Remedy{Kind: RemedyWait, Server: s.name, At: d.At}
	}, BackingOff{Attempt: n, Delay: d.Delay, Error: cause.Error()})
	endWait := s.trace.backoffWait(n, d.Delay)
	defer endWait()
	return s.pause(d.At, false)
}

// stopRetrying publishes that the server stopped retrying after failure
// d.Failures, caused by cause: unauthorized (a terminal [ErrUnauthorized])
// or failed (another terminal outcome, or the retry limit). It then waits
// for a reconnect or an enable, or, for a login the server needs, a login
// (see failed for the result).
func (s *supervisor) stopRetrying(cause error, d retry.Decision) bool {
	n := d.Failures
	state := StateFailed
	var msg string
	var remedy Remedy
	var login *oauth.LoginRequiredError
	var unauthorized *endpoint.UnauthorizedError
	var challenge string
	switch {
	case errors.As(cause, &login):
		// Only a login helps, which needs a person: wait for one (here, in
		// another process or through Manager.Login) instead of retrying.
		msg = fmt.Sprintf("%v; not retried until someone logs in", cause)
		state, challenge = StateUnauthorized, login.Challenge()
		remedy = Remedy{Kind: RemedyLogin, Server: s.name}
	case errors.As(cause, &unauthorized):
		// Retrying with the same credentials cannot succeed: wait for new
		// ones (a reconnect or a changed declaration).
		msg = fmt.Sprintf("%v; not retried with the same credentials", cause)
		state, challenge = StateUnauthorized, unauthorized.Challenge
		remedy = Remedy{Kind: RemedyCredentials, Server: s.name}
	case d.Exhausted:
		msg = fmt.Sprintf("gave up after %d %s: %v", n, plural(n, "attempt", "attempts"), cause)
		remedy = Remedy{Kind: RemedyReconnect, Server: s.name}
	default:
		// A missing program or directory does not appear within a backoff
		// schedule: retrying would only repeat the same warning.
		msg = fmt.Sprintf("%v (not retried)", cause)
		remedy = Remedy{Kind: RemedyFixDeclaration, Server: s.name}
	}
	var payload events.Payload = Failed{Attempts: n, Error: msg, Remedy: remedy.Kind}
	if state == StateUnauthorized {
		payload = Unauthorized{Challenge: challenge, Error: msg, Remedy: remedy.Kind}
	}
	s.transition(state, func(snap *snapshot) {
		snap.stopped = outcome(cause)
		snap.reconnects = s.reconnectsTaken
		snap.status.Attempts = n
		snap.status.LastError = msg
		snap.status.NextAttempt = time.Time{}
		snap.status.Remedy = remedy
	}, payload)
	s.trace.failed(errorf(CodeConnectionFailed, s.name, "connect", "%s", msg).with(remedy))
	return s.pause(time.Time{}, login != nil)
}

// pause waits until the given time (for ever if zero). It reports true
// when it is time to attempt (the time came, mcp_reconnect asked to try
// now, or, with awaitLogin, a login landed) and false when the server is
// being removed or disabled. With awaitLogin it looks every loginPoll
// whether a login landed in the state directory (a login command run in
// another process; Manager.Login reconnects by itself, and a login it
// makes is left to it).
func (s *supervisor) pause(until time.Time, awaitLogin bool) bool {
	var due, poll <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		due = t.C
	}
	var src *oauth.Source
	if awaitLogin {
		src = s.m.authSource(s.name, s.spec)
		t := time.NewTicker(s.m.loginPoll)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-due:
			return true
		case <-s.ctx.Done():
			return false
		case <-s.kick:
			if s.disabled.Load() {
				return false
			}
			if s.takeReconnect() {
				return true
			}
		case <-poll:
			landed := src != nil && src.Reload()
			if hook := s.m.loginPolled; hook != nil {
				hook(s.name)
			}
			// A login of this process reconnects by itself; acting on it
			// here too would end the session it is making.
			if landed && s.loggingIn.Load() == 0 {
				s.resetFailures()
				return true
			}
		}
	}
}

// loginPoll is how often a server waiting for a login looks whether one
// landed in the state directory (a login command run in another process). It
// reads a file's metadata; nothing goes to the server.
const loginPoll = 2 * time.Second

// takeReconnect consumes an mcp_reconnect request: the schedule and the
// breaker start over.
func (s *supervisor) takeReconnect() bool {
	if !s.newReconnect() {
		return false
	}
	s.resetFailures()
	return true
}

func (s *supervisor) resetFailures() {
	if was := s.policy.Reset(); was != retry.Closed {
		s.emit(CircuitChanged{From: Circuit(was), To: CircuitClosed, Reason: "reset"})
	}
}

// attempt makes connection attempt n: dial (spawn), handshake and first
// discovery, all bounded by the connect timeout. A panic inside is
// recovered and reported as the attempt's error: the server backs off
// and no other server notices.
func (s *supervisor) attempt(n int, probe bool) (c *conn, err error) {
	// A Reconnect made up to now is served by this attempt; one made during
	// it is pending once the session is up (see stale).
	s.takeReconnect()
	s.transition(StateConnecting, func(snap *snapshot) {
		snap.status.NextAttempt = time.Time{}
	}, Connecting{Attempt: n, Probe: probe})
	endSpan := s.trace.attempt(n)
	defer func() { endSpan(s.hide(err)) }() // after the recovery below has set err
	defer func() {
		if r := recover(); r != nil {
			s.m.log.Error("panic in connection attempt", "server", s.name, "panic", r, "stack", string(debug.Stack()))
			if c != nil {
				c.close()
			}
			c, err = nil, errorf(CodeConnectionFailed, s.name, "connect", "internal error: %v", r)
		}
	}()
	return s.connect()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
