package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/endpoint"
	"github.com/mcpvisor/mcpvisor/internal/proc"
	"github.com/mcpvisor/mcpvisor/internal/redact"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// supervisor owns one server: its goroutine is the only one that connects,
// holds the session and changes the status. Everyone else reads the
// published snapshot, waits for the next one, or asks for something by
// setting a flag and kicking the goroutine (level-based: repeated requests
// coalesce).
type supervisor struct {
	name  string // as declared
	key   string // NameKey(name): how it is compared with other names
	order string // lower-cased name: how it is sorted for display
	spec  Spec   // defaults applied
	m     *Manager
	// clients are the client sessions of a per-client server; nil if it
	// is shared or s is itself a client session.
	clients *clientSessions
	// owner is the client whose session s runs, and home the server it
	// is a session of; "" and nil for a server's own supervisor.
	owner string
	home  *supervisor
	// ownerAnswerer answers for the owner between its calls: the
	// answerer its last call gave.
	ownerAnswerer atomic.Pointer[ask.Candidate]
	// notify bounds the notification events the server can cause.
	notify *notifyLimiter
	// secrets are spec.Secrets, hidden in the server's text (secrets.go).
	secrets *redact.Secrets

	ctx    context.Context // cancelled when removal is requested
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	reason atomic.Value  // string: why it is being closed (removed, replaced, shutdown)

	requestTimeout error // timeoutError of spec.Timeouts.Request, made once

	snap atomic.Pointer[snapshot]

	// Requests from other goroutines: set the flag, then kick.
	dirty     atomic.Int32 // listKinds a list_changed asked to re-list
	disabled  atomic.Bool  // desired: no session (mcp_disable)
	reconnect atomic.Bool  // reset backoff and breaker, try now
	// reconnectAsked is when Reconnect was last called (Unix ns): a session
	// connected before then is on its way out, and nobody who comes after
	// the request is given it (see stale).
	reconnectAsked atomic.Int64
	demand         atomic.Bool                       // a caller waits for the idle server
	wanted         atomic.Int32                      // callers waiting for a session now
	reinit         atomic.Pointer[mcp.ClientSession] // this session's HTTP session expired
	subsDirty      atomic.Bool                       // callers' resource subscriptions changed
	subs           subscriptions                     // resource subscriptions callers hold
	kick           chan struct{}                     // capacity 1: some flag is set
	requests       chan refreshReq                   // forced discovery from callers
	progress       progressRoutes                    // progress tokens of calls in flight

	gate     gate         // requests using the session
	inflight inflight     // requests from their start, for abandoning them
	callers  gate         // tool calls from resolve to their event (finish waits for them)
	stats    callStats    // request metrics
	lastRecv atomic.Int64 // UnixNano when the server was last heard from

	mu sync.Mutex
	// mu guards changed, which is closed and replaced on every publish.
	changed chan struct{}

	// Owned by the supervisor goroutine.
	failures  int      // consecutive failures (attempts and unproven sessions)
	unproven  bool     // the failure being recorded is a session lost before it proved itself
	brk       *breaker // the circuit breaker
	sessions  int      // sessions established so far
	reiniting bool     // the next attempt replaces an expired HTTP session
	reinited  bool     // the current session replaced an expired one
	idleTimer *time.Timer
	slot      *ticket       // the next attempt's slot or place in line (Add, mcp_reconnect, re-init)
	turn      *ticket       // the next attempt's place in the line of attempts (Add)
	woken     bool          // the next attempt is for callers of the idle server
	trace     *connectTrace // spans of the connection attempts

	closers sync.WaitGroup // connections of timed-out attempts still stopping
}

func newSupervisor(m *Manager, name string, spec Spec) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{
		name:           name,
		key:            NameKey(name),
		order:          strings.ToLower(name),
		notify:         newNotifyLimiter(),
		secrets:        redact.New(spec.Secrets),
		spec:           spec,
		m:              m,
		ctx:            ctx,
		cancel:         cancel,
		done:           make(chan struct{}),
		changed:        make(chan struct{}),
		kick:           make(chan struct{}, 1),
		requests:       make(chan refreshReq),
		brk:            newBreaker(spec.Breaker),
		requestTimeout: timeoutError{spec.Timeouts.Request},
		trace:          m.tel.connectTrace(name, spec.Endpoint()),
	}
	s.reason.Store("removed")
	s.disabled.Store(spec.Disabled)
	state := StateConnecting
	if spec.Disabled {
		state = StateDisabled
	}
	s.snap.Store(&snapshot{status: Status{
		Name:      name,
		Transport: spec.Transport,
		Endpoint:  spec.Endpoint(),
		State:     state,
		Since:     time.Now(),
	}})
	return s
}

// wake kicks the supervisor goroutine after a flag was set. It never blocks.
func (s *supervisor) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// unwant ends a caller's wait for a session (counted in wanted). The last
// one to stop waiting for a server queued for a connection slot wakes it:
// if it was idle, nobody needs it any more.
func (s *supervisor) unwant() {
	if s.wanted.Add(-1) == 0 && s.snap.Load().status.Waiting != "" {
		s.wake()
	}
}

// stop asks the supervisor to dispose of the server, saying why.
func (s *supervisor) stop(reason string) {
	s.reason.Store(reason)
	s.cancel()
}

// watch returns the current snapshot and a channel closed at the next change.
func (s *supervisor) watch() (*snapshot, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap.Load(), s.changed
}

// transition publishes the next snapshot, built by edit from a copy of the
// current one, then the event describing it. It is the only writer of the
// snapshot and runs on the supervisor goroutine. Leaving StateRemoved is
// refused. With kind "" only the snapshot changes (health readings).
func (s *supervisor) transition(to State, edit func(*snapshot), kind events.Kind, fields events.Fields) {
	cur := s.snap.Load()
	if cur.status.State == StateRemoved {
		return
	}
	next := *cur
	next.status.State = to
	if to != cur.status.State {
		next.status.Since = time.Now()
	}
	next.status.Circuit = s.brk.state
	next.status.Waiting = ""
	if edit != nil {
		edit(&next)
		next.status.LastError = s.secrets.String(next.status.LastError)
	}
	if to != StateConnected {
		next.session, next.conn = nil, nil
		next.status.Healthy = false
		next.status.PID = 0
	}
	s.mu.Lock()
	s.snap.Store(&next)
	ch := s.changed
	s.changed = make(chan struct{})
	s.mu.Unlock()
	// The event goes out before waiters wake, so whatever a woken caller
	// publishes (its tool_call) comes after it: one server's events arrive
	// in the order they happened.
	if kind != "" {
		s.publish(kind, fields)
	}
	close(ch)
}

// run is the supervisor goroutine: connect, hold the session, recover, repeat, until
// the server is removed.
func (s *supervisor) run() {
	defer close(s.done)
	defer s.m.forget(s)
	if s.home != nil {
		defer s.home.clients.gone(s)
	}
	defer s.finish()
	for s.ctx.Err() == nil {
		if s.disabled.Load() {
			s.parkDisabled()
			continue
		}
		c := s.connectLoop()
		if c == nil {
			continue
		}
		end := s.holdSafely(c)
		if end.kind == endIdle && s.home != nil {
			// A client's session that idles out is given back: the
			// client gets a new one if it calls again.
			s.home.clients.leave(s)
			s.reason.Store("idle")
			end.kind = endStop
		}
		if end.kind == endStop {
			s.dispose(c)
			return
		}
		s.after(c, end)
	}
}

// connectLoop makes attempts until one succeeds, paced by the backoff
// schedule and the breaker. It returns nil when the server is to be
// removed or disabled.
func (s *supervisor) connectLoop() *conn {
	for s.ctx.Err() == nil && !s.disabled.Load() {
		probe := false
		if s.brk.state == CircuitOpen {
			endWait := s.trace.circuitWait(s.failures, s.brk.probeAt())
			ok := s.pause(s.brk.probeAt())
			endWait()
			if !ok {
				return nil
			}
			if s.brk.state == CircuitOpen { // not reset by mcp_reconnect meanwhile
				s.brk.halfOpen()
				s.publish(events.KindCircuit, events.Fields{"from": "open", "to": "half_open"})
				probe = true
			}
		}
		slot, ok := s.takeSlot(s.failures + 1)
		if !ok {
			return nil
		}
		turn, ok := s.takeTurn(s.failures + 1)
		if !ok {
			slot.giveBack()
			return nil
		}
		c, err := s.attempt(s.failures+1, probe)
		turn.giveBack() // connected or not, the attempt is over
		if err == nil {
			c.attempt = s.failures + 1
			c.slot = slot
			return c
		}
		slot.giveBack()
		if s.ctx.Err() != nil {
			return nil
		}
		if !s.failed(err, true) {
			return nil
		}
	}
	return nil
}

// failed records a failed attempt or a lost session and waits as the
// retry limit, the breaker and the backoff schedule say. The breaker
// counts failed attempts (breaker true), including sessions lost before
// they proved themselves; the loss of a proven session only starts the
// backoff schedule (with the defaults: five quick retries, then the
// circuit opens). It reports whether to attempt again (false: the server
// is being removed or disabled).
func (s *supervisor) failed(cause error, breaker bool) bool {
	cause = s.hide(cause)
	s.dropSlot()
	s.failures++
	n := s.failures
	s.reiniting = false
	var login *oauth.LoginRequiredError
	if errors.As(cause, &login) {
		// Only a login helps, which needs a person: wait for one (here, in
		// another process or by mcp_login) instead of retrying.
		msg := fmt.Sprintf("%v; not retried until then", cause)
		s.transition(StateUnauthorized, func(snap *snapshot) {
			snap.status.Attempts = n
			snap.status.LastError = msg
			snap.status.NextAttempt = time.Time{}
		}, events.KindUnauthorized, events.Fields{"challenge": login.Challenge(), "error": msg, "login": s.m.auth.Command(s.name)})
		s.trace.failed(errorf(CodeConnectionFailed, s.name, "connect", "%s", msg))
		return s.parkUnauthorized()
	}
	var unauthorized *endpoint.UnauthorizedError
	if errors.As(cause, &unauthorized) {
		// Retrying with the same credentials cannot succeed: wait for new
		// ones (a reconnect or a changed declaration).
		msg := fmt.Sprintf("%v; not retried: set the credentials it wants (headers = {Authorization = \"Bearer ${TOKEN}\"}), then mcp_reconnect(%q)", cause, s.name)
		s.transition(StateUnauthorized, func(snap *snapshot) {
			snap.status.Attempts = n
			snap.status.LastError = msg
			snap.status.NextAttempt = time.Time{}
		}, events.KindUnauthorized, events.Fields{"challenge": unauthorized.Challenge, "error": msg})
		s.trace.failed(errorf(CodeConnectionFailed, s.name, "connect", "%s", msg))
		return s.parkFailed()
	}
	if limit := s.spec.retryLimit(); limit >= 0 && n > limit {
		return s.giveUp(n, fmt.Sprintf("gave up after %d %s: %v", n, plural(n, "attempt", "attempts"), cause))
	}
	if errors.Is(cause, proc.ErrCannotStart) {
		// A missing program or directory does not appear within a backoff
		// schedule: retrying would only repeat the same warning.
		return s.giveUp(n, fmt.Sprintf("%v (not retried: reconnect it once that is fixed)", cause))
	}
	from := s.brk.state
	now := time.Now()
	if breaker && s.brk.failure(now, s.probeJitter()) {
		probe := s.brk.probeAt()
		s.transition(StateOpen, func(snap *snapshot) {
			snap.status.Attempts = n
			snap.status.LastError = cause.Error()
			snap.status.NextAttempt = probe
		}, events.KindCircuit, events.Fields{"from": from.String(), "to": "open", "failures": n,
			"probe_in_ms": probe.Sub(now).Milliseconds(), "error": cause.Error()})
		return true // connectLoop waits for the probe
	}
	// After a lost session (proven or not) the server is reconnecting:
	// callers that fail fast still wait for this attempt.
	lostSession := !breaker || s.unproven
	step := n
	if s.unproven {
		step, s.unproven = n+1, false
	}
	delay := s.spec.Backoff.Delay(step, s.m.rand())
	next := now.Add(delay)
	s.transition(StateBackoff, func(snap *snapshot) {
		snap.reconnecting = lostSession
		snap.status.Attempts = n
		snap.status.LastError = cause.Error()
		snap.status.NextAttempt = next
	}, events.KindBackoff, events.Fields{"attempt": n, "delay_ms": delay.Milliseconds(), "error": cause.Error()})
	endWait := s.trace.backoffWait(n, delay)
	defer endWait()
	return s.pause(next)
}

// giveUp puts the server in StateFailed with msg as its last error, and
// waits there for a reconnect or enable (see failed for the result).
func (s *supervisor) giveUp(n int, msg string) bool {
	s.transition(StateFailed, func(snap *snapshot) {
		snap.status.Attempts = n
		snap.status.LastError = msg
		snap.status.NextAttempt = time.Time{}
	}, events.KindFailed, events.Fields{"attempts": n, "error": msg})
	s.trace.failed(errorf(CodeConnectionFailed, s.name, "connect", "%s", msg))
	return s.parkFailed()
}

// probeJitter is the random fraction of open_for added to a breaker's
// probe delay; none when the backoff has jitter turned off.
func (s *supervisor) probeJitter() float64 {
	if s.spec.Backoff.Jitter == NoJitter {
		return 0
	}
	return s.m.rand()
}

// pause waits until the given time (for ever if zero). It reports true
// when it is time to attempt (the time came, or mcp_reconnect asked to
// try now) and false when the server is being removed or disabled.
func (s *supervisor) pause(until time.Time) bool {
	var due <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		due = t.C
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
		}
	}
}

// loginPoll is how often a server waiting for a login looks whether one
// landed in the state directory (mcpvisor login in another process). It
// reads a file's metadata; nothing goes to the server.
const loginPoll = 2 * time.Second

// parkUnauthorized waits in StateUnauthorized for a login (Manager.Login
// reconnects; a login by another process is found in the state
// directory), mcp_reconnect or mcp_enable. It reports as pause does.
func (s *supervisor) parkUnauthorized() bool {
	src := s.m.authSource(s.name, s.spec)
	poll := time.NewTicker(s.m.loginPoll)
	defer poll.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return false
		case <-s.kick:
			if s.disabled.Load() {
				return false
			}
			if s.takeReconnect() {
				return true
			}
		case <-poll.C:
			landed := src != nil && src.Reload()
			if hook := s.m.loginPolled; hook != nil {
				hook(s.name)
			}
			if landed {
				s.resetFailures()
				return true
			}
		}
	}
}

// parkFailed waits in StateFailed for mcp_reconnect or mcp_enable.
func (s *supervisor) parkFailed() bool { return s.pause(time.Time{}) }

// parkDisabled publishes StateDisabled (once) and waits to be enabled.
func (s *supervisor) parkDisabled() {
	s.dropSlot()
	s.trace.stopped("disabled")
	if s.snap.Load().status.State != StateDisabled {
		s.transition(StateDisabled, func(snap *snapshot) { snap.status.NextAttempt = time.Time{} }, events.KindDisabled, nil)
	}
	for s.disabled.Load() {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		}
	}
	s.reconnect.Store(false)
	s.resetFailures()
}

// parkIdle waits in StateIdle until a caller needs the server.
func (s *supervisor) parkIdle() {
	for {
		if s.reconnect.Swap(false) {
			return
		}
		if s.demand.Swap(false) {
			s.woken = true
			return
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
			if s.disabled.Load() {
				return
			}
		}
	}
}

// takeReconnect consumes an mcp_reconnect request: the schedule and the
// breaker start over.
func (s *supervisor) takeReconnect() bool {
	if !s.reconnect.Swap(false) {
		return false
	}
	s.resetFailures()
	return true
}

func (s *supervisor) resetFailures() {
	s.failures = 0
	was := s.brk.state
	s.brk.reset()
	if was != CircuitClosed {
		s.publish(events.KindCircuit, events.Fields{"from": was.String(), "to": "closed", "reason": "reset"})
	}
}

// attempt makes connection attempt n: dial (spawn), handshake and first
// discovery, all bounded by the connect timeout. A panic inside is
// recovered and reported as the attempt's error: the server backs off
// and no other server notices.
func (s *supervisor) attempt(n int, probe bool) (c *conn, err error) {
	fields := events.Fields{"attempt": n}
	if probe {
		fields["probe"] = true
	}
	s.transition(StateConnecting, func(snap *snapshot) {
		snap.status.NextAttempt = time.Time{}
	}, events.KindConnecting, fields)
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

// after handles a session that ended for a reason other than removal.
func (s *supervisor) after(c *conn, end ending) {
	switch end.kind {
	case endIdle:
		s.transition(StateIdle, nil, events.KindIdle, events.Fields{"idle_ms": s.spec.Timeouts.Idle.Milliseconds()})
		c.close()
		s.failures = 0
		s.parkIdle()
	case endDisable:
		s.transition(StateDisabled, nil, events.KindDisabled, nil)
		s.drainAndClose(c)
		s.resetFailures()
	case endReconnect:
		s.resetFailures()
		s.transition(StateConnecting, nil, events.KindDisconnected,
			events.Fields{"error": errorf(CodeConnectionFailed, s.name, "session", "closed: reconnect requested").Error()})
		s.keepSlot(c) // reconnecting now: no other server takes its place meanwhile
		c.close()
	case endReinit, endLost:
		cause := end.err
		if end.kind == endReinit {
			cause = fmt.Errorf("the server no longer knows the HTTP session: %w", mcp.ErrSessionMissing)
		}
		lost := newError(CodeConnectionFailed, s.name, "session", cause)
		s.transition(StateConnecting, func(snap *snapshot) { snap.status.LastError = lost.Error() },
			events.KindDisconnected, events.Fields{"error": lost.Error()})
		if errors.Is(cause, mcp.ErrSessionMissing) {
			s.keepSlot(c) // for the new session, unless it backs off (failed)
		}
		if errors.Is(cause, errSessionEnding) {
			// The SDK sent the session's DELETE and holds its lock until the
			// answer, which the server may hold until its handlers finish:
			// end the connection's requests rather than wait for it.
			c.cancel()
		}
		c.close()
		if errors.Is(cause, errSessionEnding) {
			if err := c.session.Wait(); err != nil { // closed now: the SDK's reason
				cause = c.lostReason(s.ctx, err)
				lost = newError(CodeConnectionFailed, s.name, "session", cause)
			}
		}
		// A connection that dies right after the handshake has not proven
		// itself: the schedule continues rather than resetting, so a server
		// that crashes after each handshake backs off and trips the breaker.
		proven := time.Since(s.snap.Load().status.ConnectedAt) >= s.spec.Backoff.Max
		if proven {
			s.failures = 0
			s.brk.reset()
		}
		// An expired HTTP session is replaced at once, single-flight (this
		// goroutine), but not twice in a row: a server that forgets every
		// new session fails like any other instead of looping.
		if errors.Is(cause, mcp.ErrSessionMissing) && (proven || !s.reinited) {
			s.reiniting = true
			return
		}
		if !proven {
			// It got through its handshake and still died: a full spawn,
			// handshake and listing per turn, so it waits one step
			// longer on the schedule than a refused attempt would.
			s.unproven = true
		}
		s.failed(lost, !proven)
	}
}

// dispose ends the session for removal: new requests are refused (CLOSED),
// the ones in flight drained up to the drain timeout, then abandoned, then
// the session closed and (stdio) the process group stopped and reaped.
func (s *supervisor) dispose(c *conn) {
	s.transition(StateClosing, nil, events.KindClosing, events.Fields{"reason": s.reason.Load()})
	s.drainAndClose(c)
}

func (s *supervisor) drainAndClose(c *conn) {
	limit := min(s.spec.Timeouts.Request, s.m.opts.DrainTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	drained := s.gate.drain(ctx)
	cancel()
	if !drained {
		s.inflight.abandon(false)
	}
	c.close()
}

// errAbandoned cancels requests still in flight when a drain runs out.
var errAbandoned = errors.New("the server was closed while the request ran")

// finish publishes closing (if not yet) and removed, last of all.
func (s *supervisor) finish() {
	if s.clients != nil {
		s.clients.closeAll(s.reason.Load().(string))
	}
	s.dropSlot()
	s.trace.stopped(s.reason.Load().(string))
	if st := s.snap.Load().status.State; st != StateClosing {
		s.transition(StateClosing, nil, events.KindClosing, events.Fields{"reason": s.reason.Load()})
	}
	s.inflight.abandon(true) // callers still waiting for a session: closing says why
	// The abandoned calls return at once; each publishes its tool_call
	// before removed, the server's last event.
	ctx, cancel := context.WithTimeout(context.Background(), s.m.opts.DrainTimeout)
	s.callers.drain(ctx)
	cancel()
	s.closers.Wait()
	s.transition(StateRemoved, nil, events.KindRemoved, events.Fields{"reason": s.reason.Load()})
}

// lostReason explains why a session ended.
func (c *conn) lostReason(ctx context.Context, waitErr error) error {
	exit := c.exitError()
	if exit == nil && (waitErr == nil || errors.Is(waitErr, io.EOF) || errors.Is(waitErr, mcp.ErrConnectionClosed)) {
		// Its stdout closed: a process that is exiting is given a moment
		// to be reaped, so the reason is its exit status.
		exit = c.awaitExit(ctx)
	}
	if exit != nil {
		return exit
	}
	if waitErr != nil {
		return fmt.Errorf("connection lost: %w", waitErr)
	}
	return errors.New("connection closed by the server")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// stale reports whether snap's session is one a Reconnect asked to replace:
// a caller after the request waits for the new one instead.
func (s *supervisor) stale(snap *snapshot) bool {
	return snap.status.ConnectedAt.UnixNano() < s.reconnectAsked.Load()
}
