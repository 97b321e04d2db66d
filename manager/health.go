package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager/internal/probe"
)

// health watches one connected session for hold: it pings the server
// every interval and notices when it has sent nothing for the server
// silence timeout. A session on the sessionless generation, where ping
// is gone, is checked with server/discover instead, the same way. It
// belongs to the supervisor goroutine, which serves its
// channels (tick, results, silence) in hold's select; each check runs on
// a goroutine of its own, which stop cuts short and waits for.
type health struct {
	s        *supervisor
	c        *conn
	interval time.Duration

	tick    *time.Timer     // the next ping is due
	results chan pingResult // capacity 1: the ping in flight's outcome
	pinging bool            // a check is in flight
	// method is the request the check sends: ping, or server/discover on
	// the sessionless generation; "" once the server answered it with
	// -32601.
	method   string
	stopPing context.CancelFunc
	pingCtx  context.Context
	pingDone chan struct{} // closed when the last ping's goroutine ended; nil before the first

	silence *time.Timer // the server silence timeout, from the last thing heard
}

// pingFailGrace is how long a failed ping waits for the session to end
// with a better reason than the ping's.
const pingFailGrace = time.Second

// pingResult is the outcome of one health check.
type pingResult struct {
	method  string // what was sent: ping or server/discover
	latency time.Duration
	err     error
}

// watchHealth starts watching c: the first check is one interval away.
// HTTP and SSE sessions are pinged at least every keepalive, so proxies
// see traffic often enough to keep their connections open.
func (s *supervisor) watchHealth(c *conn) *health {
	t := s.spec.Timeouts
	interval := t.HealthInterval
	if s.spec.Transport != TransportStdio && t.Keepalive < interval {
		interval = t.Keepalive
	}
	h := &health{
		s:        s,
		c:        c,
		interval: interval,
		method:   "ping",
		tick:     time.NewTimer(interval),
		results:  make(chan pingResult, 1),
		silence:  time.NewTimer(t.Server),
	}
	if c.discoverable() {
		h.method = probe.Method
	}
	h.pingCtx, h.stopPing = context.WithCancel(context.Background())
	return h
}

// stop stops the timers, cuts the ping in flight short and waits for its
// goroutine.
func (h *health) stop() {
	h.tick.Stop()
	h.silence.Stop()
	h.stopPing()
	if h.pingDone != nil {
		<-h.pingDone
	}
}

// due starts a check, unless one is in flight or the server answers
// none, and sets the next tick.
func (h *health) due() {
	if !h.pinging && h.method != "" {
		h.pinging = true
		done := make(chan struct{})
		h.pingDone = done
		method := h.method
		go func() {
			defer close(done)
			h.s.ping(h.pingCtx, h.c, method, h.results)
		}()
	}
	h.tick.Reset(h.interval)
}

// pinged takes a check's outcome: an answer records the latency, -32601
// stops the checks for good, any other failure ends the session (done
// true), with the session's own reason if it ends within pingFailGrace.
func (h *health) pinged(r pingResult) (end ending, done bool) {
	s, c := h.s, h.c
	h.pinging = false
	switch {
	case r.err == nil:
		s.heard()
		s.transition(StateConnected, func(n *snapshot) {
			n.status.Healthy = true
			n.status.LastPing = r.latency
		}, nil)
		return ending{}, false
	case isMethodNotFound(r.err):
		s.heard()
		h.method = ""
		s.transition(StateConnected, func(n *snapshot) { n.status.PingUnsupported = true },
			HealthUnsupported{Error: errorf(CodeConnectionFailed, s.name, r.method,
				"not supported (-32601); watching the session and request errors instead").Error()})
		return ending{}, false
	}
	if !errors.Is(r.err, ErrTimeout) {
		// The check failed fast: the session is most likely ending under
		// it, and how it ended is the better explanation. The bound is
		// for a session that carries on regardless.
		wait := time.NewTimer(pingFailGrace)
		defer wait.Stop()
		select {
		case err := <-c.lost:
			return ending{kind: endLost, err: c.lostReason(s.ctx, err)}, true
		case <-wait.C:
		case <-s.ctx.Done():
			return ending{kind: endStop}, true
		}
	}
	err := fmt.Errorf("health check failed: %s: %w", r.method, r.err)
	s.emit(HealthFailed{Error: newError(CodeConnectionFailed, s.name, r.method, r.err).Error()})
	return ending{kind: endLost, err: err}, true
}

// silent ends the session (done true) when nothing was heard from the
// server for the silence timeout; otherwise it re-arms for when that
// could next be so.
func (h *health) silent() (end ending, done bool) {
	limit := h.s.spec.Timeouts.Server
	quiet := time.Since(time.Unix(0, h.s.lastRecv.Load()))
	if quiet >= limit {
		return ending{kind: endLost, err: fmt.Errorf("nothing received from the server for %s", limit)}, true
	}
	h.silence.Reset(limit - quiet)
	return ending{}, false
}

// ping sends one health check (method: ping or server/discover) bounded
// by the health timeout. It runs on its own goroutine so the supervisor
// keeps serving; it ends when the check does, at the latest when the
// session closes.
func (s *supervisor) ping(ctx context.Context, c *conn, method string, out chan<- pingResult) {
	limit := s.spec.Timeouts.HealthTimeout
	ctx, cancel := context.WithTimeoutCause(ctx, limit, timeoutError{limit})
	defer cancel()
	start := time.Now()
	var err error
	if method == probe.Method {
		err = s.discoverProbe(ctx, c)
	} else {
		err = c.session.Ping(ctx, nil)
	}
	if err != nil && ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	out <- pingResult{method: method, latency: time.Since(start), err: err}
}

// discoverable reports whether c is checked with server/discover: its
// session is on the sessionless generation, where ping is gone (a go-sdk
// server over HTTP refuses it with 400, others answer -32601), and
// mcpvisor has its own way to the server beside the go-sdk's session (a
// stdio server's raw call channel, a streamable HTTP server's endpoint):
// the go-sdk client cannot send server/discover on a live session.
func (c *conn) discoverable() bool {
	res := c.session.InitializeResult()
	if res == nil || res.ProtocolVersion < string(Protocol20260728) {
		return false
	}
	return c.raw() != nil || c.streamable()
}

// discoverProbe sends one server/discover to c's server, on the session's
// protocol version, outside the go-sdk's session.
func (s *supervisor) discoverProbe(ctx context.Context, c *conn) error {
	version := c.session.InitializeResult().ProtocolVersion
	params, err := probe.Params(version, &mcp.Implementation{Name: "mcpvisor", Version: s.m.opts.Version})
	if err != nil {
		return err
	}
	if raw := c.raw(); raw != nil {
		return probe.Stdio(ctx, raw, params)
	}
	t := c.transport.(*mcp.StreamableClientTransport) // discoverable
	return probe.HTTP{Client: c.httpClient(t), URL: t.Endpoint, Session: c.session.ID(), Protocol: version, MaxRetries: t.MaxRetries}.Discover(ctx, params)
}

// heard records that the server was just heard from.
func (s *supervisor) heard() {
	s.lastRecv.Store(time.Now().UnixNano())
}
