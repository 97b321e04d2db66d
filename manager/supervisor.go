package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/proc"
	"github.com/mcpvisor/mcpvisor/internal/redact"
	"github.com/mcpvisor/mcpvisor/manager/internal/inflight"
	"github.com/mcpvisor/mcpvisor/manager/internal/retry"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// supervisor owns one server: its goroutine is the only one that connects,
// holds the session and changes the status. Everyone else reads the
// published snapshot, waits for the next one, or asks for something by
// setting a flag and kicking the goroutine (level-based: repeated requests
// coalesce).
//
// Its concerns live apart: when to attempt is the retry policy's (package
// retry, acted on in retrying.go); a connection is dialled and shaken hands
// with in conn.go and served by hold (session.go, its health in health.go);
// requests in flight are routed by package inflight (cancellation,
// questions from the server, progress) and admitted by the gate.
type supervisor struct {
	// Who it is; fixed when it is made.
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
	// notify bounds the notification events the server can cause.
	notify *notifyLimiter
	// secrets are spec.Secrets, hidden in the server's text (secrets.go).
	secrets *redact.Secrets

	// Its lifetime.
	ctx     context.Context // cancelled when removal is requested
	cancel  context.CancelFunc
	done    chan struct{}  // closed when run returns
	reason  atomic.Value   // string: why it is being closed (removed, replaced, shutdown)
	closers sync.WaitGroup // connections of timed-out attempts still stopping
	// removeSpan is the mcp.remove span of the Remove that stopped it.
	removeSpan atomic.Pointer[removeSpan]

	requestTimeout error // timeoutError of spec.Timeouts.Request, made once

	// What it publishes: the snapshot, replaced whole by its goroutine.
	snap atomic.Pointer[snapshot]
	mu   sync.Mutex
	// mu guards changed, which is closed and replaced on every publish.
	changed chan struct{}

	// Requests from other goroutines: set the flag, then kick.
	kick     chan struct{} // capacity 1: some flag is set
	dirty    atomic.Int32  // listKinds a list_changed asked to re-list
	disabled atomic.Bool   // desired: no session (mcp_disable)
	// loggingIn counts the logins of this process in progress
	// (Manager.Login), which reconnect the server themselves: a login
	// that lands meanwhile is theirs, not one for pause to act on.
	loggingIn atomic.Int32
	// linkSent is set while a caller's client has been sent the login link
	// (see loginByCaller): other callers wait for that login rather than
	// start their own.
	linkSent atomic.Bool
	// reconnects counts the calls of Reconnect (reset backoff and breaker,
	// try now). The supervisor acts on those it has not taken yet
	// (reconnectsTaken); a session whose attempt began before the last
	// one is on its way out, and nobody who comes after the request is
	// given it (see stale). One counter, rather than a flag and a time,
	// so that a Reconnect is either in an attempt or pending after it.
	reconnects atomic.Uint64
	demand     atomic.Bool                       // a caller waits for the idle server
	wanted     atomic.Int32                      // callers waiting for a session now
	reinit     atomic.Pointer[mcp.ClientSession] // this session's HTTP session expired
	broken     atomic.Pointer[brokenSession]     // a raw call over HTTP gave this session up
	subsDirty  atomic.Bool                       // callers' resource subscriptions changed
	levelDirty atomic.Bool                       // the log level servers are asked for changed
	subs       subscriptions                     // resource subscriptions callers hold
	requests   chan refreshReq                   // forced discovery from callers

	// Requests in flight: admitted, routed and accounted; safe for
	// concurrent use.
	gate     gate              // requests using the session
	callers  gate              // tool calls from resolve to their event (finish waits for them)
	inflight inflight.Requests // requests from their start: abandoning them, who answers for them and their owner
	progress inflight.Progress[Progress]
	stats    callStats    // request metrics
	recent   recentCalls  // the last calls, for RecentCalls
	lastRecv atomic.Int64 // UnixNano when the server was last heard from
	// stderr is the latest process started for a stdio server (kept after
	// it exits, so that its last words can still be read); nil before.
	stderr atomic.Pointer[proc.Process]

	// Owned by the supervisor goroutine.
	policy    *retry.Policy // failures, breaker and backoff: when to attempt
	sessions  int           // sessions established so far
	reiniting bool          // the next attempt replaces an expired HTTP session
	reinited  bool          // the current session replaced an expired one
	slot      *ticket       // the next attempt's slot or place in line (Add, mcp_reconnect, re-init)
	turn      *ticket       // the next attempt's place in the line of attempts (Add)
	woken     bool          // the next attempt is for callers of the idle server
	// reconnectsTaken is how many Reconnects the supervisor has acted on;
	// an attempt takes all made before it begins.
	reconnectsTaken uint64
	trace           *connectTrace // spans of the connection attempts
	// sessionless: under the auto protocol the server refused initialize
	// and took the sessionless generation, so it is not asked again.
	sessionless bool
}

func newSupervisor(m *Manager, name string, spec Spec) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{
		name:           name,
		key:            NameKey(name),
		order:          strings.ToLower(name),
		secrets:        redact.New(spec.Secrets),
		spec:           spec,
		m:              m,
		ctx:            ctx,
		cancel:         cancel,
		done:           make(chan struct{}),
		changed:        make(chan struct{}),
		kick:           make(chan struct{}, 1),
		requests:       make(chan refreshReq),
		policy:         spec.retryPolicy(m.rand),
		requestTimeout: timeoutError{spec.Timeouts.Request},
		trace:          m.tel.connectTrace(name, spec.Endpoint()),
	}
	s.notify = newNotifyLimiter(s.reportDropped)
	s.reason.Store("removed")
	s.disabled.Store(spec.Disabled)
	state, remedy := StateConnecting, Remedy{}
	if spec.Disabled {
		state, remedy = StateDisabled, Remedy{Kind: RemedyEnable, Server: name}
	}
	s.snap.Store(&snapshot{status: Status{
		Name:      name,
		Transport: spec.Transport,
		Endpoint:  spec.Endpoint(),
		State:     state,
		Since:     time.Now(),
		Remedy:    remedy,
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
	if s.wanted.Add(-1) == 0 && s.snap.Load().status.WaitingFor != WaitNone {
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
// refused. With p nil only the snapshot changes (health readings).
func (s *supervisor) transition(to State, edit func(*snapshot), p events.Payload) {
	cur := s.snap.Load()
	if cur.status.State == StateRemoved {
		return
	}
	next := *cur
	next.status.State = to
	if to != cur.status.State {
		next.status.Since = time.Now()
	}
	next.status.Circuit = Circuit(s.policy.Circuit())
	next.status.WaitingFor, next.status.Waiting = WaitNone, ""
	next.stopped = nil
	next.status.Remedy = Remedy{}
	if to == StateDisabled {
		next.status.Remedy = Remedy{Kind: RemedyEnable, Server: s.name}
	}
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
	if p != nil {
		s.emit(p)
	}
	close(ch)
}

// run is the supervisor goroutine: connect, hold the session, recover, repeat, until
// the server is removed.
func (s *supervisor) run() {
	defer close(s.done)
	defer func() { s.removeSpan.Load().end() }() // nil unless Remove asked
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

// parkDisabled publishes StateDisabled (once) and waits to be enabled.
func (s *supervisor) parkDisabled() {
	s.dropSlot()
	s.trace.stopped("disabled")
	if s.snap.Load().status.State != StateDisabled {
		s.transition(StateDisabled, func(snap *snapshot) { snap.status.NextAttempt = time.Time{} }, Disabled{})
	}
	for s.disabled.Load() {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		}
	}
	s.reconnectsTaken = s.reconnects.Load() // refused while disabled
	s.resetFailures()
}

// parkIdle waits in StateIdle until a caller needs the server.
func (s *supervisor) parkIdle() {
	for {
		if s.newReconnect() {
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

// after handles a session that ended for a reason other than removal.
func (s *supervisor) after(c *conn, end ending) {
	switch end.kind {
	case endIdle:
		s.transition(StateIdle, nil, Idle{After: s.spec.Timeouts.Idle})
		c.close()
		s.policy.Idle()
		s.parkIdle()
	case endDisable:
		s.transition(StateDisabled, nil, Disabled{})
		s.drainAndClose(c)
		s.resetFailures()
	case endReconnect:
		s.resetFailures()
		s.transition(StateConnecting, nil,
			Disconnected{Error: errorf(CodeConnectionFailed, s.name, "session", "closed: reconnect requested").Error()})
		s.keepSlot(c) // reconnecting now: no other server takes its place meanwhile
		c.close()
	case endReinit, endLost:
		cause := end.err
		if end.kind == endReinit {
			cause = fmt.Errorf("the server no longer knows the HTTP session: %w", mcp.ErrSessionMissing)
		}
		lost := newError(CodeConnectionFailed, s.name, "session", cause)
		s.transition(StateConnecting, func(snap *snapshot) { snap.status.LastError = lost.Error() },
			Disconnected{Error: lost.Error()})
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
		proven := s.policy.Lost(time.Since(s.snap.Load().status.ConnectedAt))
		// An expired HTTP session is replaced at once, single-flight (this
		// goroutine), but not twice in a row: a server that forgets every
		// new session fails like any other instead of looping.
		if errors.Is(cause, mcp.ErrSessionMissing) && (proven || !s.reinited) {
			s.reiniting = true
			return
		}
		what := retry.LostProven
		if !proven {
			// It got through its handshake and still died: a full spawn,
			// handshake and listing per turn, so it waits one step
			// longer on the schedule than a refused attempt would.
			what = retry.LostUnproven
		}
		s.failed(lost, what)
	}
}

// dispose ends the session for removal: new requests are refused (CLOSED),
// the ones in flight drained up to the drain timeout, then abandoned, then
// the session closed and (stdio) the process group stopped and reaped.
func (s *supervisor) dispose(c *conn) {
	s.transition(StateClosing, nil, Closing{Reason: s.reason.Load().(string)})
	s.drainAndClose(c)
}

func (s *supervisor) drainAndClose(c *conn) {
	limit := min(s.spec.Timeouts.Request, s.m.opts.DrainTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	drained := s.gate.drain(ctx)
	cancel()
	if !drained {
		s.inflight.Abandon(false)
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
		s.transition(StateClosing, nil, Closing{Reason: s.reason.Load().(string)})
	}
	s.inflight.Abandon(true) // callers still waiting for a session: closing says why
	// The abandoned calls return at once; each publishes its tool_call
	// before removed, the server's last event.
	ctx, cancel := context.WithTimeout(context.Background(), s.m.opts.DrainTimeout)
	s.callers.drain(ctx)
	cancel()
	s.closers.Wait()
	s.notify.stop() // what it dropped is said before removed
	s.transition(StateRemoved, nil, Removed{Reason: s.reason.Load().(string)})
}

// stale reports whether snap's session is one a Reconnect asked to replace:
// a caller after the request waits for the new one instead. A session
// whose attempt was under way when Reconnect was called is replaced too,
// even if it came up after the call (the supervisor replaces it as soon as
// it is up), so a Wait for connected never returns a session about to end.
func (s *supervisor) stale(snap *snapshot) bool {
	return snap.reconnects < s.reconnects.Load()
}

// newReconnect reports whether Reconnect was called since the supervisor
// last took its calls, and takes them.
func (s *supervisor) newReconnect() bool {
	n := s.reconnects.Load()
	if n == s.reconnectsTaken {
		return false
	}
	s.reconnectsTaken = n
	return true
}
