package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/rawhttp"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/internal/inflight"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallOptions adjusts one call.
type CallOptions struct {
	// Timeout bounds the call, including waiting for the server to
	// connect. If zero, the server's request timeout.
	Timeout time.Duration
	// Progress, if set, receives the server's progress notifications for
	// this call, in order. It runs on the connection's goroutine: it must
	// not block. Notifications the server sent just before its answer may
	// arrive just after Call returns (up to a second after); CallRaw
	// returns only once they have arrived, and none arrives after it.
	Progress func(Progress)
	// FailFast answers at once, with CONNECTION_FAILED naming the last
	// error and when the next attempt is due, when the server is backing
	// off after a failed connection attempt, instead of waiting for that
	// attempt. A server reconnecting after losing a session is still
	// waited for. The gateway sets it: a client is better served by an
	// error it can act on than by a request that hangs.
	FailFast bool
	// Client names who calls, for the tool_call event (field "client")
	// and the span (attribute mcp.client); "" for the host itself. A
	// per-client server gives each distinct Client a session of its own;
	// [Manager.ReleaseClient] frees them.
	Client string
	// Answerer, if set, answers what the server asks while the call is
	// in flight (elicitation, sampling, roots) before the host's answerer
	// does. The gateway passes its client here.
	Answerer ask.Answerer
	// LogLevel, if set, is the level ("debug", "info", ...) at or above
	// which the caller wants the log messages the server sends during
	// the call. The server is asked for it, for as long as the call
	// lasts, when that is more than it is asked for already (see
	// [Manager.HoldLogLevel]), and the call is sent only once it has
	// answered: on 2026-07-28 and later, in the request's own _meta. The
	// messages are published to every listener as any others, whose own
	// levels filter them, and those the server sent before its result are
	// published before the call returns.
	LogLevel string
}

// Progress is one progress notification of a call.
type Progress struct {
	Progress float64
	Total    float64 // zero if unknown
	Message  string
}

// Call invokes a tool by its full name ("server.tool") or by a bare tool
// name that exactly one server offers. If the server is connecting or
// backing off, Call waits for that attempt, up to the timeout; it never
// starts another. A result with IsError set is a result the caller reads
// (partial output kept), not an error; only transport and protocol
// failures are errors.
func (m *Manager) Call(ctx context.Context, name string, args any, opts CallOptions) (res *mcp.CallToolResult, err error) {
	ctx, span := m.tel.toolCall(ctx, name)
	defer func() { span.end(res, err) }()
	s, tool, err := m.resolve(name)
	if err != nil {
		return nil, err
	}
	span.target(s.name, tool, opts.Client)
	op := s.snap.Load().cat.callOp(tool)
	s, ctx, req, leave, err := s.enterCall(ctx, op, opts)
	if err != nil {
		return nil, err
	}
	defer leave() // after its event
	level, release := s.callLevel(opts.LogLevel)
	defer release()

	start := time.Now()
	var sentOn *mcp.ClientSession // the session the call was last sent on
	call := func(ctx context.Context, snap *snapshot) (bool, error) {
		t, err := s.callable(snap, tool, op)
		if err != nil {
			return false, err
		}
		if size := minFrameSize(args, s.spec.MaxFrameBytes); size > s.spec.MaxFrameBytes {
			// The server reads frames no larger than it sends: a message it
			// cannot take would end the session (a broken pipe) mid-call.
			return false, errorf(CodeInvalidArguments, s.name, op, "the arguments are at least %d bytes, over the %d-byte frame limit (max_frame_bytes); the call was not sent", size, s.spec.MaxFrameBytes)
		}
		args, err := snap.cat.schema(t).Check(args)
		if err != nil {
			return false, newError(CodeInvalidArguments, s.name, op, err)
		}
		params := &mcp.CallToolParams{Name: tool, Arguments: args}
		if opts.Progress != nil {
			token, done := s.progress.Add(opts.Progress, inflight.Grace)
			defer done()
			params.SetProgressToken(token)
		}
		span.inject(ctx, params)
		s.levelFor(ctx, snap, params, level)
		sentOn = snap.session
		res, err = snap.session.CallTool(ctx, params)
		if err != nil {
			return false, invocationFailed(s.name, op, s.callFailure(ctx, req, err, snap.conn))
		}
		snap.conn.noticesBefore(ctx) // what it logged or reported first is published first
		return res.IsError, nil
	}
	err = s.request(ctx, op, opts.FailFast, call)
	err = s.againAfterLogin(ctx, op, tool, opts, err, sentOn, func() error {
		res = nil
		return s.request(ctx, op, opts.FailFast, call)
	})
	s.callEvent(tool, opts.Client, start, res, err)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// againAfterLogin is what a call whose failure err asks for a login does:
// when the caller's client was given the login link (loginByCaller), or
// the refusal named scopes a login must add (a step-up), it waits, within
// the call's time, for the login to connect the server on a session other
// than sentOn, and sends the call again, once, with again. It returns the
// call's outcome: err as it was when no login was asked for.
func (s *supervisor) againAfterLogin(ctx context.Context, op, tool string, opts CallOptions, err error, sentOn *mcp.ClientSession, again func() error) error {
	if byCaller, lerr := s.loginByCaller(ctx, op, opts, err, sentOn); byCaller {
		// The caller's client was given the login link: once the login
		// connects the server, the call is sent again, once.
		if lerr != nil {
			return lerr
		}
		return again()
	}
	scopes := stepUpScopes(err)
	if scopes == nil {
		return err
	}
	// The call asked for a login (see stepup.go): once one brings a new
	// session, it is sent again, once.
	cause := s.awaitLogin(ctx, sentOn)
	if cause == nil {
		return again()
	}
	var login *oauth.LoginRequiredError
	errors.As(err, &login)
	return invocationFailed(s.name, op, &stepUpError{tool: tool, scopes: scopes, login: login, cause: cause})
}

// callEvent records a finished tool call among the server's recent calls
// and publishes it (the log shows it at DEBUG, at WARN when it failed). A
// call that failed or answered isError is always published; one that went
// well only when a subscriber asks for tool calls (a Lua hook, a log at
// DEBUG, a console page streaming): the others take them passively, and a
// call costs them nothing. The server's metrics count every call either
// way.
func (s *supervisor) callEvent(tool, client string, start time.Time, res *mcp.CallToolResult, err error) {
	now := time.Now()
	p := ToolCall{Tool: tool, Duration: now.Sub(start), IsError: res != nil && res.IsError, Client: client}
	if err != nil {
		p.Error = err.Error()
		var e *Error
		if errors.As(err, &e) {
			p.Code = e.Code
		}
		p.Cancelled = errors.Is(err, ErrCancelled)
	}
	home := s
	if s.home != nil {
		home = s.home // a client's session: its server keeps the calls
	}
	home.recent.add(RecentCall{Time: now, ToolCall: p})
	if err == nil && !p.IsError && !s.m.bus.Wants(events.KindToolCall) {
		return
	}
	s.emit(p)
}

// request runs one request on the server's session: it waits for the
// session (session), holds the gate while fn runs so neither the idle
// timeout nor a disposal closes the session under it, and accounts the
// outcome in the server's metrics. fn reports whether a tool answered with
// isError.
func (s *supervisor) request(ctx context.Context, op string, failFast bool, fn func(context.Context, *snapshot) (bool, error)) error {
	snap, err := s.session(ctx, op, failFast)
	if err != nil {
		return s.hide(err)
	}
	defer s.gate.exit()
	stats := s.callStats()
	start := time.Now()
	stats.touch(start)
	toolErr, err := fn(ctx, snap)
	var e *Error
	if errors.As(err, &e) && (e.Code == CodeInvalidArguments || e.Code == CodeToolNotFound) || errors.Is(err, ErrNotRaw) {
		stats.touch(time.Now()) // rejected before reaching the server
		return err
	}
	if err == nil || !(errors.Is(err, ErrDisconnected) || errors.Is(err, ErrTimeout)) {
		s.heard()
	}
	stats.record(start, time.Now(), err, toolErr)
	if errors.Is(err, mcp.ErrSessionMissing) {
		// Only the supervisor starts the new session; concurrent failures
		// of the same session ask once (single-flight).
		s.reinit.CompareAndSwap(nil, snap.session)
		s.wake()
	}
	return s.hide(err)
}

// callFailure turns what the SDK returned into the cause users see. When
// the session died under the call, it says so, with the process's exit
// status if that is why.
func (s *supervisor) callFailure(ctx context.Context, req uint64, err error, c *conn) error {
	if stepUpScopes(err) != nil {
		// The server's refusal came back, whatever happened to the call
		// since: the scopes it names are what the caller needs to hear.
		return err
	}
	if cause := context.Cause(ctx); cause != nil {
		var te timeoutError
		switch {
		case errors.As(cause, &te):
			return te
		case s.inflight.Abandoned(req):
			return fmt.Errorf("%w (%w)", errAbandoned, ErrDisconnected)
		}
		return cancelledError{cause}
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		return fmt.Errorf("the server no longer knows this HTTP session; a new session is being started; the request may not have run, retry it: %w", err)
	}
	if errors.Is(err, rawhttp.ErrBroken) {
		// A raw call's failure that makes the go-sdk give its session up:
		// the session is ended as it would have ended it (sessionBroken).
		return fmt.Errorf("the session ended during the call; it may or may not have run: %w (%w)", err, ErrDisconnected)
	}
	// A session that ends under a call fails it with ErrConnectionClosed or,
	// when the peer hung up mid-read (a killed stdio server), a wrapped EOF.
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if exit := c.awaitExit(ctx); exit != nil {
			return fmt.Errorf("the call was cut off: server %w; it may or may not have run (%w)", exit, ErrDisconnected)
		}
		return fmt.Errorf("connection lost during the call; it may or may not have run: %w (%w)", err, ErrDisconnected)
	}
	// Over streamable HTTP the SDK fails the calls in flight with its
	// transport's error when it gives the session up, and then ends the
	// session. An error response from the server (a JSON-RPC error) is not
	// that.
	var rpcErr *jsonrpc.Error
	fromServer := errors.As(err, &rpcErr) && rpcErr.Code != codeRejectedByTransport
	if !fromServer && !errors.Is(err, ErrDisconnected) && c.streamable() && c.endedWithin(sessionEndGrace) {
		return fmt.Errorf("the session ended during the call; it may or may not have run: %w (%w)", err, ErrDisconnected)
	}
	return err
}

// brokenSession is a session a raw call over HTTP gave up, and why.
type brokenSession struct {
	session *mcp.ClientSession
	err     error
}

// sessionBroken ends session as lost with err, as the go-sdk ends its
// session when its transport fails: a raw call over HTTP failed in a way
// the go-sdk does not survive (rawhttp.ErrBroken). The supervisor ends it
// once, if it is still the current one, and reconnects.
func (s *supervisor) sessionBroken(session *mcp.ClientSession, err error) {
	if b := s.broken.Load(); b != nil && b.session == session {
		return // the first failure says why
	}
	s.broken.Store(&brokenSession{session: session, err: err})
	s.wake()
}

// invocationFailed is a request that failed on its way to the server or
// back, with the remedy its cause calls for: a login when the server's
// authorization wants one, a retry when a fresh token was obtained but the
// request was not sent again.
func invocationFailed(server, op string, err error) *Error {
	e := newError(CodeInvocationFailed, server, op, err)
	var login *oauth.LoginRequiredError
	var refreshed *oauth.TokenRefreshedError
	switch {
	case errors.As(err, &login):
		e.Remedy = Remedy{Kind: RemedyLogin, Server: server}
	case errors.As(err, &refreshed):
		e.Remedy = Remedy{Kind: RemedyRetry, Server: server}
	}
	return e
}

// codeRejectedByTransport is the code of the go-sdk's jsonrpc2.ErrRejected
// (internal to it), which wraps HTTP failures: a transport error, not an
// answer from the server.
const codeRejectedByTransport = -32005

// sessionEndGrace is how long a call that failed with a transport error
// waits to learn whether the session ended with it (the SDK ends it right
// after failing the calls in flight), and how long hold waits for the
// SDK's reason once it has begun ending an HTTP session.
const sessionEndGrace = 50 * time.Millisecond

// session waits until the server is connected, then admits the caller
// through the gate and returns the snapshot holding its session; the
// caller must call s.gate.exit when done. It never starts a connection
// itself: the supervisor is already trying, or is woken for an idle
// server (single-flight by construction: the supervisor owns the session).
func (s *supervisor) session(ctx context.Context, op string, failFast bool) (*snapshot, error) {
	snap, ended, err := s.await(ctx, true, func(snap *snapshot) (bool, error) {
		st := snap.status
		switch st.State {
		case StateConnected:
			if s.stale(snap) {
				break // Reconnect is replacing it: wait for the new one
			}
			if s.gate.enter() {
				if s.snap.Load() == snap {
					return true, nil
				}
				s.gate.exit() // it changed meanwhile; look again
			}
			// The gate is closed: the session is about to go idle or be
			// disposed; the next snapshot says which.
		case StateRemoved, StateClosing:
			return true, errorf(CodeClosed, s.name, op, "server is being removed")
		case StateUnauthorized:
			return true, newError(CodeConnectionFailed, s.name, op, stoppedError{snap.stopped, fmt.Sprintf("server requires authorization: %s", st.LastError)}).with(st.Remedy)
		case StateFailed:
			return true, newError(CodeConnectionFailed, s.name, op, stoppedError{snap.stopped, fmt.Sprintf("server is failed: %s", st.LastError)}).with(st.Remedy)
		case StateDisabled:
			return true, errorf(CodeServerDisabled, s.name, op, "server is disabled").with(st.Remedy)
		case StateBackoff:
			if failFast && !snap.reconnecting && st.LastError != "" {
				return true, errorf(CodeConnectionFailed, s.name, op, "not connected: %s", st.LastError).with(st.Remedy)
			}
		case StateOpen:
			return true, errorf(CodeCircuitOpen, s.name, op, "circuit open after %d failed attempts (last error: %s)",
				st.Attempts, st.LastError).with(st.Remedy)
		}
		return false, nil
	})
	if !ended {
		if err != nil {
			return nil, err
		}
		return snap, nil
	}
	st := snap.status
	if cur := s.snap.Load().status.State; cur == StateClosing || cur == StateRemoved {
		return nil, errorf(CodeClosed, s.name, op, "server is being removed")
	}
	if cur := s.snap.Load().status; cur.WaitingFor != WaitNone {
		return nil, newError(CodeConnectionLimit, s.name, "connect", slotWaitError{cur.Waiting, context.Cause(ctx), lastErrorSuffix(cur)}).
			with(Remedy{Kind: RemedyRetry, Server: s.name})
	}
	var te timeoutError
	if !errors.As(context.Cause(ctx), &te) {
		return nil, errorf(CodeConnectionFailed, s.name, op, "cancelled while %s%s", st.State, lastErrorSuffix(st))
	}
	if st.State == StateConnecting && st.LastError == "" {
		return nil, newError(CodeConnectionTimeout, s.name, op, fmt.Errorf("still connecting: %w", te))
	}
	return nil, errorf(CodeConnectionFailed, s.name, op, "not connected (%s)%s: %w", st.State, lastErrorSuffix(st), te)
}

// await runs accept on the server's snapshot, and again on each new one,
// until accept is done (its error, if any, is returned) or ctx ends (ended
// is then true, with the last snapshot seen). A caller that needs a session
// is counted as waiting for one: an idle server is woken for it, and a
// woken server stays in line for a connection slot while anyone waits.
// Calls and Manager.Wait share this one loop.
func (s *supervisor) await(ctx context.Context, need bool, accept func(*snapshot) (bool, error)) (_ *snapshot, ended bool, _ error) {
	if need {
		s.wanted.Add(1)
		defer s.unwant()
	}
	for {
		snap, changed := s.watch()
		if done, err := accept(snap); done {
			return snap, false, err
		}
		if need && snap.status.State == StateIdle {
			s.demand.Store(true)
			s.wake()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return snap, true, nil
		}
	}
}

// stoppedError is a request refused because the server stopped
// retrying; the terminal outcome that stopped it, if any, is in its chain.
type stoppedError struct {
	outcome error // ErrUnauthorized, ErrCannotStart or nil
	msg     string
}

func (e stoppedError) Error() string { return e.msg }

func (e stoppedError) Unwrap() error { return e.outcome }

// slotWaitError is a caller's wait for a server held back by the
// connection cap ([Options.MaxConnections]) that ended first.
type slotWaitError struct {
	limit string // "max connections (2) reached"
	cause error  // why the caller's wait ended
	last  string // " (last error: …)" of the server's earlier attempt, or ""
}

func (e slotWaitError) Error() string {
	var te timeoutError
	if errors.As(e.cause, &te) {
		return fmt.Sprintf("%s; no slot came free within %s%s", e.limit, te.after, e.last)
	}
	return fmt.Sprintf("%s; the caller stopped waiting for a slot (%v)%s", e.limit, e.cause, e.last)
}

func (e slotWaitError) Unwrap() error { return e.cause }

// enterCall is what a call does before its request: it finds the
// supervisor to send it to (the client's own session of a per-client
// server), takes a place among that server's callers and makes the
// request's context, answerer included. leave ends all of it, once the
// call's event is published.
func (s *supervisor) enterCall(ctx context.Context, op string, opts CallOptions) (_ *supervisor, _ context.Context, req uint64, leave func(), err error) {
	if s, err = s.target(opts.Client, op); err != nil {
		return nil, nil, 0, nil, err
	}
	if !s.callers.enter() {
		return nil, nil, 0, nil, errorf(CodeClosed, s.name, op, "server is being removed")
	}
	ctx, req, cancel := s.requestContext(ctx, opts.Timeout)
	leave = func() {
		s.inflight.End(req, cancel)
		s.callers.exit()
	}
	return s, s.asking(ctx, req, opts), req, leave, nil
}

// callable is tool as snap lists it, or why it cannot be called there:
// it is not listed, or its schema is one no call can satisfy.
func (s *supervisor) callable(snap *snapshot, tool, op string) (*mcp.Tool, error) {
	t := snap.cat.tool(tool)
	if t == nil {
		return nil, toolNotFound(s.name, tool, snap.cat.toolNames())
	}
	if reason := snap.cat.problem(tool); reason != "" {
		return nil, errorf(CodeInvalidArguments, s.name, op, "%s; the call was not sent (the server must fix the tool's schema)", reason)
	}
	return t, nil
}

// requestContext bounds one request by timeout, or by the server's request
// timeout when zero; its cause says which limit ran out. The request is in
// flight (a drain that runs out abandons it) until s.inflight.End(id,
// cancel).
func (s *supervisor) requestContext(ctx context.Context, timeout time.Duration) (_ context.Context, id uint64, cancel context.CancelFunc) {
	cause := s.requestTimeout // boxed once: no allocation per request
	if timeout <= 0 {
		timeout = s.spec.Timeouts.Request
	} else if timeout != s.spec.Timeouts.Request {
		cause = timeoutError{timeout}
	}
	ctx, cancel = context.WithTimeoutCause(ctx, timeout, cause)
	return ctx, s.inflight.Add(cancel), cancel
}

// minFrameSize is a lower bound of the JSON size of a call's arguments:
// the bytes of every string, key and number in them, without quotes,
// escapes or punctuation. It allocates nothing, so every call can afford
// it; it stops counting once past limit. It knows the shapes arguments
// have when they come from JSON or Lua (and raw JSON); anything else
// counts as one byte.
func minFrameSize(v any, limit int) int {
	switch x := v.(type) {
	case string:
		return len(x)
	case json.RawMessage:
		return len(x)
	case []byte:
		return len(x) * 4 / 3 // sent as base64
	case map[string]any:
		n := 0
		for k, e := range x {
			if n += len(k) + minFrameSize(e, limit-n); n > limit {
				return n
			}
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			if n += 1 + minFrameSize(e, limit-n); n > limit {
				return n
			}
		}
		return n
	}
	return 1
}

// A call refused for want of scopes (a 403 insufficient_scope) asks for a
// login: the server's session ends and it waits, unauthorized, with the
// login as its remedy, for one that asks for the scopes granted and those
// the server named (package oauth keeps both). The call itself waits for
// that login, within its own time, and is sent once more on the session it
// brings; it is never sent more than twice.

// stepUpScopes returns the scopes a call's failure says a login must add,
// or nil when it is no step-up.
func stepUpScopes(err error) []string {
	var login *oauth.LoginRequiredError
	if !errors.As(err, &login) || len(login.Scopes) == 0 {
		return nil
	}
	return login.Scopes
}

// awaitLogin waits until the server is connected on a session other than
// failed (a login, here or in another process, has reconnected it). It
// returns nil then, and otherwise why not: the cause of ctx's end, or the
// state that no login leaves by itself.
func (s *supervisor) awaitLogin(ctx context.Context, failed *mcp.ClientSession) error {
	_, ended, err := s.await(ctx, true, func(snap *snapshot) (bool, error) {
		switch st := snap.status.State; st {
		case StateConnected:
			return snap.session != failed, nil
		case StateRemoved, StateClosing, StateDisabled, StateFailed, StateOpen:
			return true, fmt.Errorf("the server is %s", st)
		}
		return false, nil
	})
	if ended {
		return context.Cause(ctx)
	}
	return err
}

// stepUpError is a call that needed scopes no login brought within its
// time.
type stepUpError struct {
	tool   string
	scopes []string
	login  error // the refusal: a *oauth.LoginRequiredError
	cause  error // why the wait ended: the call's timeout or cancellation
}

func (e *stepUpError) Error() string {
	return fmt.Sprintf("calling %q needs scopes %q, which the login did not grant, and no login granting them came within the call (%v)",
		e.tool, strings.Join(e.scopes, " "), e.cause)
}

func (e *stepUpError) Unwrap() []error { return []error{e.login, e.cause} }
