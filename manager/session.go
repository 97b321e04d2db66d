package manager

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// endKind is why hold returned.
type endKind int

const (
	endStop      endKind = iota // the server is being removed
	endLost                     // the session died (err says why)
	endIdle                     // idle timeout with nothing in flight
	endDisable                  // mcp_disable
	endReconnect                // mcp_reconnect
	endReinit                   // the HTTP session expired under a request
)

type ending struct {
	kind endKind
	err  error // for endLost
}

// holdSafely is hold with a panic recovered: logged with its
// stack, it ends the session as lost, so the server reconnects on its
// backoff schedule and no other server notices.
func (s *supervisor) holdSafely(c *conn) (end ending) {
	defer func() {
		if r := recover(); r != nil {
			s.m.log.Error("panic in supervisor", "server", s.name, "panic", r, "stack", string(debug.Stack()))
			end = ending{kind: endLost, err: fmt.Errorf("internal error: %v", r)}
		}
	}()
	return s.hold(c)
}

// testHookHold, if set, runs when hold has published a connection
// (tests inject a panic with it).
var testHookHold atomic.Pointer[func(server string)]

// errSessionEnding is why a session was lost when the SDK has begun
// closing it (it sent the HTTP session's DELETE) before saying why; once
// closed, the session's own error replaces it.
var errSessionEnding = errors.New("the client library is closing the HTTP session after a stream or request failed")

// pingFailGrace is how long a failed ping waits for the session to end
// with a better reason than the ping's.
const pingFailGrace = time.Second

// pingResult is the outcome of one health ping.
type pingResult struct {
	latency time.Duration
	err     error
}

// hold publishes the connection and keeps it until it ends: the session
// dies, a stdio server's process exits, a ping goes unanswered, the server falls silent, the idle timeout
// passes with nothing in flight, or a caller asks for something. Meanwhile
// it re-lists what list_changed notifications and forced discoveries ask
// for.
func (s *supervisor) hold(c *conn) ending {
	s.connected(c)
	if hook := testHookHold.Load(); hook != nil {
		(*hook)(s.name)
	}
	t := s.spec.Timeouts

	lost := c.lost
	// A stdio server's exit ends the session by itself: a grandchild that
	// still holds its stdout keeps the EOF from coming.
	var exited <-chan struct{}
	if p := c.proc(); p != nil {
		exited = p.Exited()
	}

	interval := t.HealthInterval
	if s.spec.Transport != TransportStdio && t.Keepalive < interval {
		interval = t.Keepalive // traffic often enough for proxies
	}
	pingT := time.NewTimer(interval)
	defer pingT.Stop()
	pings := make(chan pingResult, 1)
	pinging, unsupported := false, false
	// The ping goroutine belongs to hold: it ends when its ping does, and
	// hold cuts it short and waits for it before returning.
	pingCtx, stopPing := context.WithCancel(context.Background())
	var pingDone chan struct{}
	defer func() {
		stopPing()
		if pingDone != nil {
			<-pingDone
		}
	}()

	silence := time.NewTimer(t.Server)
	defer silence.Stop()

	var idleC <-chan time.Time
	if t.Idle != Never {
		// Re-armed from the last activity by checkIdle.
		s.idleTimer = time.NewTimer(t.Idle)
		defer s.idleTimer.Stop()
		idleC = s.idleTimer.C
	}

	for {
		select {
		case err := <-lost:
			return ending{kind: endLost, err: c.lostReason(s.ctx, err)}
		case <-exited:
			return ending{kind: endLost, err: c.lostReason(s.ctx, nil)}
		case <-c.needLogin:
			// Its token was refused for good, or a request needs more
			// scopes: calls would only fail until someone logs in.
			return ending{kind: endLost, err: c.loginError()}
		case <-c.httpEnded:
			// The SDK is ending the HTTP session. Its Wait says why once the
			// DELETE is answered, which a server may hold until its
			// handlers finish: the status does not wait for that.
			wait := time.NewTimer(sessionEndGrace)
			defer wait.Stop()
			select {
			case err := <-lost:
				return ending{kind: endLost, err: c.lostReason(s.ctx, err)}
			case <-wait.C:
				return ending{kind: endLost, err: errSessionEnding}
			case <-s.ctx.Done():
				return ending{kind: endStop}
			}
		case <-s.ctx.Done():
			return ending{kind: endStop}
		case <-pingT.C:
			if !pinging && !unsupported {
				pinging = true
				pingDone = make(chan struct{})
				go func(done chan struct{}) {
					defer close(done)
					s.ping(pingCtx, c, pings)
				}(pingDone)
			}
			pingT.Reset(interval)
		case r := <-pings:
			pinging = false
			switch {
			case r.err == nil:
				s.heard()
				s.transition(StateConnected, func(n *snapshot) {
					n.status.Healthy = true
					n.status.LastPing = r.latency
				}, nil)
			case isMethodNotFound(r.err):
				s.heard()
				unsupported = true
				s.transition(StateConnected, func(n *snapshot) { n.status.PingUnsupported = true },
					HealthUnsupported{Error: errorf(CodeConnectionFailed, s.name, "ping",
						"not supported (-32601); watching the session and request errors instead").Error()})
			default:
				if !errors.Is(r.err, ErrTimeout) {
					// The ping failed fast: the session is most likely ending
					// under it, and how it ended is the better explanation.
					// The bound is for a session that carries on regardless.
					wait := time.NewTimer(pingFailGrace)
					defer wait.Stop()
					select {
					case err := <-lost:
						return ending{kind: endLost, err: c.lostReason(s.ctx, err)}
					case <-wait.C:
					case <-s.ctx.Done():
						return ending{kind: endStop}
					}
				}
				err := fmt.Errorf("health check failed: ping: %w", r.err)
				s.emit(HealthFailed{Error: newError(CodeConnectionFailed, s.name, "ping", r.err).Error()})
				return ending{kind: endLost, err: err}
			}
		case <-silence.C:
			quiet := time.Since(time.Unix(0, s.lastRecv.Load()))
			if quiet >= t.Server {
				return ending{kind: endLost, err: fmt.Errorf("nothing received from the server for %s", t.Server)}
			}
			silence.Reset(t.Server - quiet)
		case <-idleC:
			if s.checkIdle() {
				return ending{kind: endIdle}
			}
		case <-s.kick:
			if s.disabled.Load() {
				return ending{kind: endDisable}
			}
			if s.reconnect.Swap(false) {
				return ending{kind: endReconnect}
			}
			if s.reinit.CompareAndSwap(c.session, nil) {
				return ending{kind: endReinit}
			}
			if s.subsDirty.Swap(false) {
				s.syncSubscriptions(c)
			}
			s.demand.Store(false)
			_ = s.rediscover(c, listKind(s.dirty.Swap(0)))
		case req := <-s.requests:
			req.reply <- s.rediscover(c, req.kinds)
		}
	}
}

// connected publishes a new session: status, events, catalog changes.
func (s *supervisor) connected(c *conn) {
	init := c.session.InitializeResult()
	prev := s.snap.Load().cat
	now := time.Now()
	s.dirty.Store(0)
	s.demand.Store(false)
	s.reinit.Store(nil)
	s.heard()
	s.sessions++
	if s.sessions > 1 {
		s.stats.reconnected()
	}
	was := s.brk.success()
	s.trace.connected()
	s.gate.open()
	s.transition(StateConnected, func(n *snapshot) {
		n.session, n.conn = c.session, c
		n.cat = c.cat
		n.status.Attempts = 0
		n.status.LastError = ""
		n.status.NextAttempt = time.Time{}
		n.status.ConnectedAt = now
		n.status.PID = c.pid()
		n.status.Healthy = true
		n.status.LastPing = 0
		n.status.PingUnsupported = false
		n.status.setCatalog(c.cat)
		if init != nil {
			n.status.Protocol = init.ProtocolVersion
			n.status.Instructions = init.Instructions
			n.status.Capabilities = init.Capabilities
			if init.ServerInfo != nil {
				n.status.ServerName = init.ServerInfo.Name
				n.status.ServerVersion = init.ServerInfo.Version
			}
		}
	}, connected(c, init))
	if was != CircuitClosed {
		s.emit(CircuitChanged{From: was, To: CircuitClosed})
	}
	s.reinited = s.reiniting
	if s.reiniting {
		s.reiniting = false
		s.emit(SessionReinitialized{})
	}
	s.subsDirty.Store(false)
	s.syncSubscriptions(c)
	if prev != nil { // a reconnect: the server may have new tools, say what changed
		s.publishChanges(prev, c.cat, listAll)
	}
	s.publishRefused(c.cat)
}

// checkIdle closes the gate and reports true when the idle timeout has
// passed since the last activity with nothing in flight; otherwise it
// re-arms the timer for when it next could.
func (s *supervisor) checkIdle() bool {
	closed, rest := s.gate.closeIfIdle(s.snap.Load().status.ConnectedAt, s.spec.Timeouts.Idle)
	if !closed {
		s.idleTimer.Reset(rest)
	}
	return closed
}

// ping sends one health ping bounded by the health timeout. It runs on its
// own goroutine so the supervisor keeps serving; it ends when the ping
// does, at the latest when the session closes.
func (s *supervisor) ping(ctx context.Context, c *conn, out chan<- pingResult) {
	limit := s.spec.Timeouts.HealthTimeout
	ctx, cancel := context.WithTimeoutCause(ctx, limit, timeoutError{limit})
	defer cancel()
	start := time.Now()
	err := c.session.Ping(ctx, nil)
	if err != nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	out <- pingResult{latency: time.Since(start), err: err}
}

// heard records that the server was just heard from.
func (s *supervisor) heard() {
	s.lastRecv.Store(time.Now().UnixNano())
}

// connected describes a new connection in its event.
func connected(c *conn, init *mcp.InitializeResult) Connected {
	p := Connected{Attempt: c.attempt, Tools: len(c.cat.tools), PID: c.pid()}
	if init != nil {
		p.Initialized, p.Protocol = true, init.ProtocolVersion
		if init.ServerInfo != nil {
			p.Described, p.ServerName, p.ServerVersion = true, init.ServerInfo.Name, init.ServerInfo.Version
		}
	}
	return p
}
