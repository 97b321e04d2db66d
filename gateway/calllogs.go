package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a server logs while it serves a client's call goes to that client
// on the call's own stream, before the call's result: over streamable
// HTTP a message sent outside any request travels on the session's
// separate event stream, which the client reads in no particular order
// with the call's. The manager returns a call of a stdio server once the
// messages the server sent before its result are published (see
// manager.Manager.Call), and a call of a client that set a logging level
// waits, before its result goes out, until deliver has sent what it held
// (flush). Other clients of the server get the messages as before, on
// their sessions.

// logRelays are the calls in flight whose clients hear their server's log
// messages on the call's stream.
type logRelays struct {
	mu sync.Mutex
	// mu guards byServer.
	byServer map[string][]*logRelay
}

// logRelay is one call's.
type logRelay struct {
	ctx context.Context // the call's: a message sent with it goes on the call's stream
	ss  *mcp.ServerSession
	// to, if not nil, tells where a message goes instead (a sessionless
	// client's call: see upstreamCall.to); ss is then nil.
	to     func() (context.Context, *mcp.ServerSession)
	client string // the session's label: a per-client server's messages are its client's
	// raw, if not nil, is a fast call's response or stdio connection:
	// messages go there as JSON-RPC messages, at the level fast's client
	// set, rather than through the go-sdk (ss is fast's, for sendLogAs).
	raw  messageSender
	fast *session

	mu sync.Mutex
	// mu guards closed; sending counts the sends under way, which begin
	// only while it is not closed.
	closed  bool
	sending sync.WaitGroup
}

func (r *logRelays) add(server string, l *logRelay) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byServer == nil {
		r.byServer = map[string][]*logRelay{}
	}
	r.byServer[server] = append(r.byServer[server], l)
}

func (r *logRelays) remove(server string, l *logRelay) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rest := slices.DeleteFunc(slices.Clone(r.byServer[server]), func(x *logRelay) bool { return x == l })
	if len(rest) == 0 {
		delete(r.byServer, server)
		return
	}
	r.byServer[server] = rest
}

// of lists server's relays, newest first; the caller may keep the slice.
func (r *logRelays) of(server string) []*logRelay {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.byServer[server])
	slices.Reverse(out)
	return out
}

// relayLogs makes the log messages of c's server reach s's client on the
// call's stream, ctx's, until the function it returns has run; the call
// runs it once the upstream result has come, before the result goes out.
// A client that set no logging level hears nothing, and is not waited
// for. On 2026-07-28 the level is not set with logging/setLevel: a
// request says in its _meta the level it wants for that call, which the
// go-sdk reads from the request's context. A sessionless client's
// messages go on the stream of its request waiting on the call.
func (g *Gateway) relayLogs(ctx context.Context, s *session, c upstreamCall) (finish func()) {
	if c.levelInMeta && c.logLevel == "" || !c.levelInMeta && !s.logging.Load() {
		return func() {}
	}
	l := &logRelay{ctx: ctx, ss: s.ss, client: s.label}
	if c.to != nil {
		l.ss, l.to = nil, c.to
	}
	server, _, _ := strings.Cut(c.name, ".")
	return g.relay(ctx, server, l)
}

// relayFastLogs is relayLogs for a fast call of s's client, which set a
// logging level, to server: the messages go to to, a JSON-RPC message
// each, filtered at the client's level as the go-sdk filters them.
func (g *Gateway) relayFastLogs(ctx context.Context, s *session, server string, to messageSender) (finish func()) {
	return g.relay(ctx, server, &logRelay{ctx: ctx, ss: s.ss, client: s.label, raw: to, fast: s})
}

// relay registers l for server's messages until the function it returns
// has run, which sends what servers said before then first.
func (g *Gateway) relay(ctx context.Context, server string, l *logRelay) (finish func()) {
	g.relays.add(server, l)
	return func() {
		g.flush(ctx)
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.sending.Wait() // a message on its way goes before the result
		g.relays.remove(server, l)
	}
}

// send sends p on the call's stream; false if the call is over (or
// ending), for the caller to send it as any other message.
func (l *logRelay) send(p *mcp.LoggingMessageParams) bool {
	l.mu.Lock()
	if l.closed || l.ctx.Err() != nil {
		l.mu.Unlock()
		return false
	}
	l.sending.Add(1)
	l.mu.Unlock()
	defer l.sending.Done()
	if l.raw != nil {
		if l.fast.hears(p.Level) {
			if msg, err := rawLogMessage(p); err == nil {
				_ = l.raw.send(msg)
			}
		}
		return true
	}
	ctx, ss := l.ctx, l.ss
	if l.to != nil {
		if ctx, ss = l.to(); ss == nil {
			return true // no request of the client's waits to carry it
		}
	}
	ctx, cancel := context.WithTimeout(ctx, logSendTimeout)
	defer cancel()
	_ = ss.Log(ctx, p)
	return true
}

// rawLogMessage is p as the go-sdk sends it, a notifications/message.
func rawLogMessage(p *mcp.LoggingMessageParams) ([]byte, error) {
	params, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	msg := make([]byte, 0, len(params)+64)
	msg = append(msg, `{"jsonrpc":"2.0","method":"notifications/message","params":`...)
	msg = append(msg, params...)
	return append(msg, '}'), nil
}

// hears reports whether s's client hears a message at level: one at or
// above the level it set last, as the go-sdk's session compares them (an
// unknown level counts as debug); none before it sets one.
func (s *session) hears(level mcp.LoggingLevel) bool {
	s.mu.Lock()
	set := s.level
	s.mu.Unlock()
	return set != "" && levelRank(level) >= levelRank(mcp.LoggingLevel(set))
}

// levelRank orders log levels, debug (and any level not known) first.
func levelRank(l mcp.LoggingLevel) int {
	return max(slices.Index(logLevelOrder, l), 0)
}

// logLevelOrder is the order of the log levels, most verbose first.
var logLevelOrder = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logLevels notes which clients set a logging level: only their calls
// relay log messages. The level is held upstream while the client holds
// it, so that a client asking for more than servers are asked by default
// hears it.
func (ep *endpoint) logLevels(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "logging/setLevel" && err == nil {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss.InitializeParams() != nil {
				s := ep.g.clients.session(ep, ss)
				s.logging.Store(true)
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && p != nil {
					ep.g.holdLevel(s, string(p.Level))
				}
			}
		}
		return res, err
	}
}

// logLevelHolder is a source that can ask its servers for a log level
// (the manager; see manager.Manager.HoldLogLevel).
type logLevelHolder interface {
	HoldLogLevel(level string) (release func())
}

// holdLevel holds s's new logging level upstream in place of the one it
// held, until it sets another or ends (releaseLevel).
func (g *Gateway) holdLevel(s *session, level string) {
	h, ok := g.src.(logLevelHolder)
	if !ok {
		return
	}
	release := h.HoldLogLevel(level)
	s.mu.Lock()
	prev := s.levelHeld
	s.levelHeld, s.level = release, level
	ended := s.ended
	s.mu.Unlock()
	if prev != nil {
		prev()
	}
	if ended {
		s.releaseLevel() // it ended meanwhile
	}
}

// callLevel is the level at which the call c of s's client wants its
// server's log messages, for the manager to ask of the server before
// sending it: the one its _meta names on 2026-07-28 and later, else the
// one the client set with logging/setLevel; "" for none.
func (s *session) callLevel(c upstreamCall) string {
	if c.levelInMeta {
		return c.logLevel
	}
	if !s.logging.Load() {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.level
}

// releaseLevel lets go of the level s holds upstream, if any.
func (s *session) releaseLevel() {
	s.mu.Lock()
	release := s.levelHeld
	s.levelHeld = nil
	s.mu.Unlock()
	if release != nil {
		release()
	}
}
