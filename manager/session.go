package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// hold publishes the connection and keeps it until it ends: the session
// dies, a stdio server's process exits, a ping goes unanswered, the server
// falls silent, the idle timeout passes with nothing in flight, or a
// caller asks for something. Meanwhile it re-lists what list_changed
// notifications and forced discoveries ask for. Each concern has its
// handler: the connection's end (here and httpEnding), its health (health),
// idleness (checkIdle) and what callers ask (kicked).
func (s *supervisor) hold(c *conn) ending {
	s.connected(c)
	if hook := testHookHold.Load(); hook != nil {
		(*hook)(s.name)
	}
	// A stdio server's exit ends the session by itself: a grandchild that
	// still holds its stdout keeps the EOF from coming.
	var exited <-chan struct{}
	if p := c.proc(); p != nil {
		exited = p.Exited()
	}
	h := s.watchHealth(c)
	defer h.stop()
	var idle *time.Timer
	var idleC <-chan time.Time
	if t := s.spec.Timeouts.Idle; t != Never {
		// Re-armed from the last activity by checkIdle.
		idle = time.NewTimer(t)
		defer idle.Stop()
		idleC = idle.C
	}

	for {
		select {
		// The connection ends.
		case err := <-c.lost:
			return ending{kind: endLost, err: c.lostReason(s.ctx, err)}
		case <-exited:
			return ending{kind: endLost, err: c.lostReason(s.ctx, nil)}
		case <-c.needLogin:
			// Its token was refused for good, or a request needs more
			// scopes: calls would only fail until someone logs in.
			return ending{kind: endLost, err: c.loginError()}
		case <-c.httpEnded:
			return s.httpEnding(c)
		case <-s.ctx.Done():
			return ending{kind: endStop}
		// Its health.
		case <-h.tick.C:
			h.due()
		case r := <-h.results:
			if end, ok := h.pinged(r); ok {
				return end
			}
		case <-h.silence.C:
			if end, ok := h.silent(); ok {
				return end
			}
		// Idleness.
		case <-idleC:
			if s.checkIdle(idle) {
				return ending{kind: endIdle}
			}
		// What callers ask.
		case <-s.kick:
			if end, ok := s.kicked(c); ok {
				return end
			}
		case req := <-s.requests:
			req.reply <- s.rediscover(c, req.kinds)
		}
	}
}

// httpEnding ends a session the SDK is giving up (streamable HTTP). Its
// Wait says why once the DELETE is answered, which a server may hold
// until its handlers finish: the status does not wait longer than
// sessionEndGrace for that.
func (s *supervisor) httpEnding(c *conn) ending {
	wait := time.NewTimer(sessionEndGrace)
	defer wait.Stop()
	select {
	case err := <-c.lost:
		return ending{kind: endLost, err: c.lostReason(s.ctx, err)}
	case <-wait.C:
		return ending{kind: endLost, err: errSessionEnding}
	case <-s.ctx.Done():
		return ending{kind: endStop}
	}
}

// kicked serves what other goroutines asked for by setting a flag and
// kicking the supervisor, in order of precedence: a disable, a reconnect,
// a new HTTP session or an HTTP session a raw call gave up end the session
// (done true); changed resource subscriptions and lists to re-list are
// served on it.
func (s *supervisor) kicked(c *conn) (end ending, done bool) {
	switch {
	case s.disabled.Load():
		return ending{kind: endDisable}, true
	case s.newReconnect():
		return ending{kind: endReconnect}, true
	case s.reinit.CompareAndSwap(c.session, nil):
		return ending{kind: endReinit}, true
	}
	if b := s.broken.Load(); b != nil && b.session == c.session && s.broken.CompareAndSwap(b, nil) {
		return ending{kind: endLost, err: fmt.Errorf("connection lost: %w", b.err)}, true
	}
	if s.subsDirty.Swap(false) {
		s.syncSubscriptions(c)
	}
	if s.levelDirty.Swap(false) {
		s.syncLogLevel(c)
	}
	s.demand.Store(false)
	_ = s.rediscover(c, listKind(s.dirty.Swap(0)))
	return ending{}, false
}

// connected publishes a new session: status, events, catalog changes.
func (s *supervisor) connected(c *conn) {
	init := c.session.InitializeResult()
	prev := s.snap.Load().cat
	now := time.Now()
	s.dirty.Store(0)
	s.demand.Store(false)
	s.reinit.Store(nil)
	s.broken.Store(nil)
	s.heard()
	s.sessions++
	if s.sessions > 1 {
		s.stats.reconnected()
	}
	was := Circuit(s.policy.Connected())
	s.trace.connected()
	s.gate.open()
	s.transition(StateConnected, func(n *snapshot) {
		n.session, n.conn = c.session, c
		n.cat = c.cat
		n.status.Attempts = 0
		n.status.LastError = ""
		n.status.NextAttempt = time.Time{}
		n.status.ConnectedAt = now
		n.reconnects = s.reconnectsTaken
		n.status.PID = c.pid()
		n.status.Healthy = true
		n.status.LastPing = 0
		n.status.PingUnsupported = false
		n.status.HealthByDiscover = c.discoverable()
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
	s.levelDirty.Store(false)
	s.syncLogLevel(c) // the level may have changed while it connected
	if prev != nil {  // a reconnect: the server may have new tools, say what changed
		s.publishChanges(prev, c.cat, listAll)
	}
	s.publishRefused(c.cat)
}

// checkIdle closes the gate and reports true when the idle timeout has
// passed since the last activity with nothing in flight; otherwise it
// re-arms idle for when it next could.
func (s *supervisor) checkIdle(idle *time.Timer) bool {
	closed, rest := s.gate.closeIfIdle(s.snap.Load().status.ConnectedAt, s.spec.Timeouts.Idle)
	if !closed {
		idle.Reset(rest)
	}
	return closed
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

// Protocol is the protocol generation the host speaks with a server
// ([Spec].Protocol).
type Protocol string

// The protocol choices.
const (
	// ProtocolAuto, the default, speaks the generation that lets every
	// feature of the server reach every client (see handshake).
	ProtocolAuto Protocol = ""
	// Protocol20251125 is the generation of the initialize handshake and
	// sessions, in which a server sends its questions (elicitation,
	// sampling, roots) as requests of its own.
	Protocol20251125 Protocol = "2025-11-25"
	// Protocol20260728 is the sessionless generation (server/discover), in
	// which a server asks only through the input requests of a call's
	// result. A server that does not speak it is answered in the newest
	// generation it does, as the go-sdk negotiates.
	Protocol20260728 Protocol = "2026-07-28"
)

// handshake opens c's session on its transport in the generation the
// spec asks for. ProtocolAuto chooses by what the server can then send:
//
//   - stdio, sse and in-process servers are asked for 2025-11-25. A server
//     keeps a session there, so it may send requests (elicitation,
//     sampling, roots) during a call, which the gateway carries to clients
//     of both generations; the go-sdk also turns a 2026-07-28 style
//     handler's input requests into such requests on that generation. On
//     2026-07-28 a server that sends requests fails instead. Only a server
//     that answers the initialize request with an error (it knows no
//     other generation than the sessionless one) is connected again, on
//     2026-07-28, and from then on connected on 2026-07-28 at once.
//   - streamable HTTP servers get the go-sdk's own negotiation:
//     server/discover on 2026-07-28 first, initialize on 2025-11-25 when
//     the server does not take it. A go-sdk server speaks 2026-07-28 over
//     HTTP only when it keeps no session, and without one it cannot send
//     requests on 2025-11-25: input requests are its only way to ask.
func (s *supervisor) handshake(ctx context.Context, c *conn) (*mcp.ClientSession, error) {
	want := s.spec.Protocol
	if want == ProtocolAuto && s.spec.Transport == TransportHTTP {
		return c.client.Connect(ctx, c.transport, nil)
	}
	if want == ProtocolAuto {
		want = Protocol20251125
		if s.sessionless {
			want = Protocol20260728
		}
	}
	cs, err := c.client.Connect(ctx, c.transport, &mcp.ClientSessionOptions{ProtocolVersion: string(want)})
	var refused *jsonrpc.Error
	switch {
	case err == nil:
		if got := cs.InitializeResult().ProtocolVersion; want == Protocol20260728 && got < string(want) {
			s.m.log.Warn("the server does not speak the protocol asked for; it answered in an older one",
				"server", s.name, "protocol", want, "negotiated", got)
		}
		return cs, nil
	case !errors.As(err, &refused) || want != Protocol20251125:
		return nil, err
	case s.spec.Protocol == Protocol20251125:
		return nil, fmt.Errorf("the server refused the %s handshake (protocol = %q; \"auto\" also tries 2026-07-28): %w", want, want, err)
	}
	// It takes no initialize: connect again, sessionless.
	if cl, ok := c.transport.(io.Closer); ok {
		_ = cl.Close()
	}
	if err := s.open(ctx, c); err != nil {
		return nil, err
	}
	cs, err = c.client.Connect(ctx, c.transport, &mcp.ClientSessionOptions{ProtocolVersion: string(Protocol20260728)})
	s.sessionless = err == nil
	return cs, err
}
