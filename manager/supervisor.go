package manager

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// supervisor owns one server: its goroutine is the only one that connects,
// holds the session and changes the status. Everyone else reads the
// published snapshot or waits for the next one.
type supervisor struct {
	name string // as declared
	spec Spec   // defaults applied
	m    *Manager

	ctx    context.Context // cancelled to remove the server
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	snap atomic.Pointer[snapshot]

	dirty    atomic.Int32    // listKinds a list_changed asked to re-list
	poke     chan struct{}   // capacity 1: dirty has bits
	requests chan refreshReq // forced discovery from callers
	progress progressRoutes  // progress tokens of calls in flight

	mu sync.Mutex
	// mu guards changed, which is closed and replaced on every publish.
	changed chan struct{}
}

func newSupervisor(m *Manager, name string, spec Spec) *supervisor {
	ctx, cancel := context.WithCancel(context.Background())
	s := &supervisor{
		name:     name,
		spec:     spec,
		m:        m,
		ctx:      ctx,
		cancel:   cancel,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		poke:     make(chan struct{}, 1),
		requests: make(chan refreshReq),
	}
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

// watch returns the current snapshot and a channel closed at the next change.
func (s *supervisor) watch() (*snapshot, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snap.Load(), s.changed
}

// transition publishes the next snapshot, built by edit from a copy of the
// current one, then the event describing it. It is the only writer of the
// snapshot and runs on the supervisor goroutine. Leaving StateRemoved is
// refused.
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
	if edit != nil {
		edit(&next)
	}
	if to != StateConnected {
		next.session, next.conn = nil, nil
	}
	s.mu.Lock()
	s.snap.Store(&next)
	ch := s.changed
	s.changed = make(chan struct{})
	s.mu.Unlock()
	close(ch)
	if kind != "" {
		s.m.bus.Publish(kind, s.name, fields)
	}
}

// run is the supervisor goroutine: connect, serve, back off, repeat, until
// the server is removed.
func (s *supervisor) run() {
	defer close(s.done)
	defer s.transition(StateRemoved, nil, events.KindRemoved, nil)
	if s.spec.Disabled {
		<-s.ctx.Done()
		return
	}
	failures := 0
	for s.ctx.Err() == nil {
		c, err := s.attempt(failures + 1)
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			failures++
			if !s.backoff(failures, err) {
				return
			}
			continue
		}
		c.attempt = failures + 1
		up := time.Now()
		lost := s.serve(c)
		if s.ctx.Err() != nil {
			s.transition(StateClosing, nil, "", nil) // withdraw the session first
			c.close()
			return
		}
		c.close()
		// A connection that dies right after the handshake has not proven
		// itself: the schedule continues rather than resetting (FAULTS #2).
		if time.Since(up) >= s.spec.Backoff.Max {
			failures = 0
		}
		failures++
		lost = newError(CodeConnectionFailed, s.name, "session", lost)
		s.m.bus.Publish(events.KindDisconnected, s.name, events.Fields{"error": lost.Error()})
		if !s.backoff(failures, lost) {
			return
		}
	}
}

// backoff waits out the delay after the n-th consecutive failure, or moves
// to failed when retries are exhausted. It reports whether to try again.
func (s *supervisor) backoff(n int, cause error) bool {
	if limit := s.spec.retryLimit(); limit >= 0 && n > limit {
		msg := fmt.Sprintf("gave up after %d %s: %v", n, plural(n, "attempt", "attempts"), cause)
		s.transition(StateFailed, func(n *snapshot) { n.status.LastError = msg },
			events.KindFailed, events.Fields{"attempts": n, "error": msg})
		<-s.ctx.Done()
		return false
	}
	delay := s.spec.Backoff.Delay(n, s.m.rand())
	next := time.Now().Add(delay)
	s.transition(StateBackoff, func(snap *snapshot) {
		snap.status.Attempts = n
		snap.status.LastError = cause.Error()
		snap.status.NextAttempt = next
		snap.status.PID = 0
	}, events.KindBackoff, events.Fields{"attempt": n, "delay_ms": delay.Milliseconds(), "error": cause.Error()})
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// serve publishes the connection and blocks until it is lost (returning
// why) or the server is removed (returning nil). Meanwhile it re-lists what
// list_changed notifications and forced discoveries ask for.
func (s *supervisor) serve(c *conn) error {
	init := c.session.InitializeResult()
	prev := s.snap.Load().cat
	now := time.Now()
	s.transition(StateConnected, func(n *snapshot) {
		n.session, n.conn = c.session, c
		n.cat = c.cat
		n.status.Attempts = 0
		n.status.LastError = ""
		n.status.NextAttempt = time.Time{}
		n.status.ConnectedAt = now
		n.status.PID = c.pid()
		n.status.setCatalog(c.cat)
		if init != nil {
			n.status.Protocol = init.ProtocolVersion
			if init.ServerInfo != nil {
				n.status.ServerName = init.ServerInfo.Name
				n.status.ServerVersion = init.ServerInfo.Version
			}
		}
	}, events.KindConnected, connectedFields(c, init))
	if prev != nil { // a reconnect: the server may have changed (R-DISC-3)
		s.publishChanges(prev, c.cat, listAll)
	}
	lost := make(chan error, 1)
	go func() { lost <- c.session.Wait() }()
	for {
		select {
		case err := <-lost:
			return c.lostReason(err)
		case <-s.ctx.Done():
			return nil
		case <-s.poke:
			_ = s.rediscover(c, listKind(s.dirty.Swap(0)))
		case req := <-s.requests:
			req.reply <- s.rediscover(c, req.kinds)
		}
	}
}

// connectedFields describe a new connection in its event.
func connectedFields(c *conn, init *mcp.InitializeResult) events.Fields {
	f := events.Fields{"attempt": c.attempt, "tools": len(c.cat.tools)}
	if pid := c.pid(); pid != 0 {
		f["pid"] = pid
	}
	if init != nil {
		f["protocol"] = init.ProtocolVersion
		if init.ServerInfo != nil {
			f["server_name"] = init.ServerInfo.Name
			f["server_version"] = init.ServerInfo.Version
		}
	}
	return f
}

// attempt makes connection attempt n: dial (spawn), handshake and first
// discovery, all bounded by the connect timeout. A panic inside is
// recovered and reported as the attempt's error (R-LIFE-5).
func (s *supervisor) attempt(n int) (c *conn, err error) {
	s.transition(StateConnecting, func(snap *snapshot) {
		snap.status.NextAttempt = time.Time{}
	}, events.KindConnecting, events.Fields{"attempt": n})
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

// lostReason explains why a session ended.
func (c *conn) lostReason(waitErr error) error {
	if exit := c.exitError(); exit != nil {
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
