package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/endpoint"
	"github.com/mcpvisor/mcpvisor/internal/proc"
	"github.com/mcpvisor/mcpvisor/internal/rawhttp"
	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/internal/rounds"
	"github.com/mcpvisor/mcpvisor/manager/notify"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is one established connection: the SDK session, the transport under
// it and what discovery found.
type conn struct {
	client    *mcp.Client
	offers    ask.Kind    // what the client declared it answers
	ident     clientIdent // what the client says of itself in each request of 2026-07-28
	roots     clientRoots // the client's own list of roots
	session   *mcp.ClientSession
	transport mcp.Transport
	cancel    context.CancelFunc // ends the session's context
	cat       *catalog           // what the first discovery found
	attempt   int                // the attempt that made it
	slot      *ticket            // its connection slot; nil if none
	// httpEnded is closed when the SDK gives the streamable HTTP session
	// up; nil for other transports.
	httpEnded <-chan struct{}
	// auth is the login of a server that logs in, nil for others; needLogin
	// is its channel that closes when only a new login helps, as of the
	// attempt's start.
	auth      *oauth.Source
	needLogin <-chan struct{}
	// waited is closed once the session's Wait has returned: the session
	// is over. It is nil until the handshake succeeds and watch starts
	// the goroutine that waits.
	waited chan struct{}
	lost   chan error // what Wait returned; buffered, written once
	// subscribed are the resources the session is subscribed to (owned by
	// the supervisor goroutine); requests are the goroutines that
	// subscribe and unsubscribe, which close waits for.
	subscribed map[string]bool
	requests   sync.WaitGroup
	// notices counts the log and progress notifications the session has
	// handled (noticesBefore).
	notices *noticeTally
	// counted is set when the go-sdk's reading of a streamable HTTP
	// server's streams counts notifications in notices (countNotices);
	// plain is then the client as dialed, which raw requests go through.
	counted bool
	plain   *http.Client
	// level is the log level the connection attempt asked the session
	// for; levelWake (capacity 1, made by the supervisor goroutine) wakes
	// the goroutine that asks for the levels wanted later (syncLogLevel).
	level     mcp.LoggingLevel
	levelWake chan struct{}
	// answers follows the session's requests for a level, for calls that
	// wait until their level is set (awaitLevel).
	answers levelAnswers
}

// proc is the process under a stdio connection, or nil.
func (c *conn) proc() *proc.Process {
	if c == nil {
		return nil
	}
	if t, ok := c.transport.(*proc.Transport); ok {
		return t.Process()
	}
	return nil
}

func (c *conn) pid() int {
	if p := c.proc(); p != nil {
		return p.Pid()
	}
	return 0
}

// exitError describes the process's exit, or nil if it runs or there is none.
func (c *conn) exitError() error {
	if p := c.proc(); p != nil {
		return p.ExitError()
	}
	return nil
}

// watch starts the goroutine that waits for the session to end; lost gets
// what Wait returned. The goroutine belongs to the connection: close waits
// for it. It runs before the connection is published.
func (c *conn) watch() {
	c.waited, c.lost = make(chan struct{}), make(chan error, 1)
	go func() {
		defer close(c.waited)
		c.lost <- c.session.Wait()
	}()
}

// close ends the session and stops whatever is under it (for stdio: the
// process group, reaped).
func (c *conn) close() {
	if c.session != nil {
		_ = c.session.Close()
	}
	if cl, ok := c.transport.(io.Closer); ok {
		_ = cl.Close()
	}
	c.cancel()
	if c.waited != nil {
		<-c.waited // Wait returns once Close has
	}
	c.requests.Wait() // they end with the session
	c.slot.giveBack()
}

// errConnectTimeout is the cause given to an attempt's context when the
// connect timeout fires.
var errConnectTimeout = errors.New("connect timeout")

// errRemoving is the cause given to an attempt's context when the server
// is removed during the attempt.
var errRemoving = errors.New("server removed")

// connect makes one attempt. The session's context lives as long as the
// session (the SDK's legacy SSE client ends its session when the context
// given to Connect is cancelled); a timer bounds the handshake and first
// discovery.
func (s *supervisor) connect() (*conn, error) {
	// The session must outlive a removal request until its requests are
	// drained, so removal cancels only the attempt, not the session.
	ctx, cancel := context.WithCancelCause(context.Background())
	c := &conn{cancel: func() { cancel(nil) }}
	unlink := context.AfterFunc(s.ctx, func() { cancel(errRemoving) })
	limit := s.spec.Timeouts.Connect
	timer := time.AfterFunc(limit, func() { cancel(errConnectTimeout) })
	fail := func(op string, err error) (*conn, error) {
		timer.Stop()
		unlink()
		if context.Cause(ctx) == errConnectTimeout {
			// Report the timeout when it happens; stopping a hung process
			// takes its grace periods, which finish waits for.
			s.closers.Go(c.close)
			return nil, newError(CodeConnectionTimeout, s.name, op, timeoutError{limit})
		}
		c.close()
		if ctx.Err() != nil && s.ctx.Err() != nil {
			return nil, newError(CodeClosed, s.name, op, errors.New("server removed"))
		}
		if exit := c.awaitExit(s.ctx); exit != nil {
			err = exit
		}
		if c.loginNeeded() {
			// A request of the attempt (the event stream, a list) was
			// refused for want of a login: whatever the SDK made of that
			// refusal, only a login helps.
			err = c.loginError()
		}
		return nil, newError(CodeConnectionFailed, s.name, op, explainReach(err, s.spec))
	}

	dialOp := "connect"
	if s.spec.Transport == TransportStdio {
		dialOp = "spawn"
	}
	if c.auth = s.m.authSource(s.name, s.spec); c.auth != nil {
		c.needLogin = c.auth.LoginNeeded()
	}
	c.notices = &noticeTally{more: make(chan struct{})}
	if err := s.open(ctx, c); err != nil {
		return fail(dialOp, err)
	}
	c.client, c.offers, c.ident = s.m.newClient(s, c.notices)
	if c.offers&ask.Roots != 0 {
		c.roots.start(ctx, s, c)
	}
	var err error
	c.session, err = s.handshake(ctx, c)
	if err != nil {
		return fail("initialize", err)
	}
	c.watch()
	cat, err := discover(ctx, c.session, nil, listAll)
	if err != nil {
		var de *discoverError
		if errors.As(err, &de) {
			return fail(de.op, de.err)
		}
		return fail("discover", err)
	}
	c.cat = cat
	if caps := c.session.InitializeResult().Capabilities; caps != nil && caps.Logging != nil {
		// Servers send log messages only once asked (protocols before
		// 2026-07-28, where logging is deprecated but still served); they
		// become notification events. A refusal is not worth failing the
		// connection for.
		c.level = s.m.levels.level()
		_ = c.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: c.level})
		c.answers.set(c.level, true)
	}
	if !timer.Stop() || !unlink() {
		return fail("connect", context.Cause(ctx))
	}
	return c, nil
}

// open spawns or dials the transport of c.
func (s *supervisor) open(ctx context.Context, c *conn) error {
	var t mcp.Transport
	var err error
	if s.spec.Transport == TransportInProcess {
		// The server is in the host: its own Dialer reaches it, whatever
		// Options.Dial substitutes for processes and the network.
		t, err = s.spec.Dial.Dial(ctx)
	} else {
		t, err = s.m.dial(ctx, s.name, s.spec)
	}
	if err != nil {
		return err
	}
	c.transport, c.httpEnded = t, endpoint.Ended(t)
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		c.countNotices(st, s.spec.MaxFrameBytes)
	}
	if p := c.proc(); p != nil {
		s.stderr.Store(p)
	}
	return nil
}

// streamable reports whether the connection is streamable HTTP.
func (c *conn) streamable() bool {
	if c == nil {
		return false
	}
	_, ok := c.transport.(*mcp.StreamableClientTransport)
	return ok
}

// endedWithin reports whether the session ends within d: a request that
// failed with a transport error gives the SDK that long to say whether
// the session failed with it.
func (c *conn) endedWithin(d time.Duration) bool {
	if c == nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.httpEnded:
		return true
	case <-c.waited:
		return true
	case <-t.C:
		return false
	}
}

// awaitExit gives a stdio process whose stdout closed (it broke the
// handshake, or the session) a moment to exit, so the error can say how it
// exited and what it printed. The bound is for a process that closes its
// stdout and carries on; ctx (the server's removal) cuts it short.
func (c *conn) awaitExit(ctx context.Context) error {
	p := c.proc()
	if p == nil {
		return nil
	}
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	select {
	case <-p.Exited():
	case <-t.C:
	case <-ctx.Done():
	}
	return p.ExitError()
}

// exitGrace bounds awaitExit.
const exitGrace = 500 * time.Millisecond

// newClient builds the SDK client of one connection. It declares the
// capabilities something can answer (elicitation, sampling, roots; see
// package ask) and no others: advertising roots invites a roots/list from
// the server, and closing the session before it is answered makes Close
// wait out the SDK's 5s terminate timeout. Server notifications become
// notices for the manager's listeners (see note).
func (m *Manager) newClient(s *supervisor, notices *noticeTally) (*mcp.Client, ask.Kind, clientIdent) {
	caps := &mcp.ClientCapabilities{}
	opts := &mcp.ClientOptions{
		Capabilities: caps,
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			s.logged(r.Params)
			notices.took()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.progressed(r.Params)
			notices.took()
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			s.listChanged(notify.Tools, listTools)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			s.listChanged(notify.Resources, listResources)
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			s.listChanged(notify.Prompts, listPrompts)
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			s.updated(r.Params)
		},
	}
	offers := m.offers(s)
	if offers&ask.Elicitation != 0 {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}
		opts.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return s.elicit(reporting(ctx, r.Session, r.Params), r.Params)
		}
	}
	if offers&ask.Sampling != 0 {
		caps.Sampling = &mcp.SamplingCapabilities{} // plain text sampling: no tools
		opts.CreateMessageWithToolsHandler = func(ctx context.Context, r *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			if r.Params != nil {
				ctx = s.m.streams.carried(ctx, r.Params.Meta)
			}
			return s.sample(reporting(ctx, r.Session, r.Params), r.Params)
		}
	}
	if offers&ask.Roots != 0 {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	impl := &mcp.Implementation{Name: "mcpvisor", Version: m.opts.Version}
	client := mcp.NewClient(impl, opts)
	if offers != 0 {
		client.AddReceivingMiddleware(s.answering)
	}
	return client, offers, identOf(impl, caps)
}

// ownMeta is the _meta a server sent with a notification, without what
// the protocol put there for this session (the id of the subscription
// stream it came on), or nil if nothing is left.
func ownMeta(meta mcp.Meta) map[string]any {
	var own map[string]any
	for k, v := range meta {
		if k == mcp.MetaKeySubscriptionID {
			continue
		}
		if own == nil {
			own = make(map[string]any, len(meta))
		}
		own[k] = v
	}
	return own
}

// reachError is a failure to reach a remote server, said in its own words
// ("connection refused at 127.0.0.1:9") rather than through the layers
// that passed it on (initialize, the SDK's send, the HTTP client, the
// dial). The cause stays in the chain.
type reachError struct {
	msg string
	err error
}

func (e *reachError) Error() string { return e.msg }

func (e *reachError) Unwrap() error { return e.err }

// explainReach returns err as a *reachError when it is a refused
// connection or an unknown host of spec's URL, else err.
func explainReach(err error, spec Spec) error {
	if spec.Transport != TransportHTTP && spec.Transport != TransportSSE {
		return err
	}
	host := spec.URL
	if u, perr := url.Parse(spec.URL); perr == nil && u.Host != "" {
		host = u.Host
	}
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return &reachError{msg: fmt.Sprintf("connection refused at %s (is the server running, and on that port?)", host), err: err}
	case errors.As(err, &dns) && dns.IsNotFound:
		return &reachError{msg: fmt.Sprintf("no such host %q (check the url)", dns.Name), err: err}
	}
	return err
}

// loginNeeded reports whether only a login helps the connection now: a
// request refused for want of one closed the channel it took at its start.
func (c *conn) loginNeeded() bool {
	if c.needLogin == nil {
		return false
	}
	select {
	case <-c.needLogin:
		return true
	default:
		return false
	}
}

// loginError is why the connection's login no longer helps.
func (c *conn) loginError() error {
	if e := c.auth.LoginError(); e != nil {
		return e
	}
	return errNoLogin
}

// ErrNotRaw is returned by [Manager.CallRaw] for a call it does not
// make: the caller makes it with [Manager.Call] instead. Nothing was
// sent, counted or published.
var ErrNotRaw = errors.New("not a call for the raw path")

// CallRaw calls server's tool as [Manager.Call] does (the same waiting,
// circuit and state checks, validation, limits, statistics, tool_call
// event, idle timer and cancellation), but with the arguments and the
// request's _meta as JSON (either may be nil) and the server's result as
// it sent it, raw: the go-sdk neither decodes nor re-encodes the call.
// An answer with isError set is a result, as for Call.
//
// It serves stdio servers spawned by the manager and streamable HTTP
// servers the manager dials, on either protocol generation; for anything
// else it returns ErrNotRaw at once, and so for a tool of a 2026-07-28 HTTP server whose schema puts
// arguments in headers (x-mcp-header), which the go-sdk's client sends
// with headers of their own. On 2026-07-28 a call carries in its _meta
// what the go-sdk's client adds to each request (the protocol version,
// the client's information and capabilities, the log level servers are
// asked for), and over HTTP the headers it adds (Mcp-Method, Mcp-Name).
// When such a server answers with input requests (it asks something
// before it answers), the rest of the call goes to the connection's
// go-sdk client, from the round already answered, so nothing is sent
// twice: it answers the questions as on the go-sdk path, each later
// round goes out on the raw path as the go-sdk encoded it, and the
// result is the go-sdk's, encoded again.
//
// A call with a log level (opts.LogLevel) holds it, and waits for the
// server to take it, as Call does.
//
// With a progress callback (opts.Progress), the progressToken of meta is
// replaced with one of the manager's, unique on the server's connection,
// and the server's progress under it goes to the callback, all of it
// before CallRaw returns and none after. Over HTTP, what the server
// sends on the call's stream before the result is handled as on the
// go-sdk's session: log messages and progress are published before the
// call returns, and what the server asks is answered as it is there (the
// caller's Answerer first), the answer POSTed back on the session.
// What it sends carries meta as given, except for the trace context: as
// with Call, the server is sent the W3C trace context of the manager's
// mcp.tool_call span (a child of the caller's) when tracing records.
func (m *Manager) CallRaw(ctx context.Context, server, tool string, args, meta json.RawMessage, opts CallOptions) (result json.RawMessage, err error) {
	if m.opts.Dial != nil {
		return nil, ErrNotRaw
	}
	s, tool, err := m.resolve(server + "." + tool)
	if err != nil {
		return nil, err
	}
	if !rawTransport(s.spec) {
		return nil, ErrNotRaw
	}
	ctx, span := m.tel.toolCall(ctx, s.name+"."+tool)
	isError := false
	defer func() {
		if span != nil {
			span.end(&mcp.CallToolResult{IsError: isError}, err)
		}
	}()
	span.target(s.name, tool, opts.Client)
	meta = span.injectRaw(ctx, meta)
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
		if len(args) > s.spec.MaxFrameBytes {
			return false, errorf(CodeInvalidArguments, s.name, op, "the arguments are %d bytes, over the %d-byte frame limit (max_frame_bytes); the call was not sent", len(args), s.spec.MaxFrameBytes)
		}
		var decoded any
		if len(args) > 0 && string(args) != "null" {
			if err := json.Unmarshal(args, &decoded); err != nil {
				return false, errorf(CodeInvalidArguments, s.name, op, "the arguments are not valid JSON: %v", err)
			}
		} else {
			args = nil
		}
		if _, err := snap.cat.schema(t).Check(decoded); err != nil {
			return false, newError(CodeInvalidArguments, s.name, op, err)
		}
		version := sessionVersion(snap)
		sessionless := version >= string(Protocol20260728)
		if sessionless && s.spec.Transport == TransportHTTP && snap.cat.headerBound(t) {
			s.m.log.Debug("raw call left to the go-sdk: the tool's schema puts arguments in HTTP headers (x-mcp-header)", "server", s.name, "tool", tool)
			return false, ErrNotRaw
		}
		sent := meta
		if opts.Progress != nil {
			// What the server reported before its answer has been handled
			// by the time the call returns (noticesBefore; over HTTP, on
			// the call's own stream): the route goes with the call.
			token, done := s.progress.Add(opts.Progress, 0)
			defer done()
			sent = withProgressToken(meta, token)
		}
		callArgs := args
		if sessionless {
			if sent, err = snap.conn.sessionlessMeta(sent, version, s.logLevelOf(snap)); err != nil {
				return false, errorf(CodeInvalidArguments, s.name, op, "%v", err)
			}
			if callArgs == nil {
				callArgs = json.RawMessage("{}") // as the go-sdk sends a call without arguments
			}
		}
		params, err := rawCallParams(tool, callArgs, sent)
		if err != nil {
			return false, errorf(CodeInvalidArguments, s.name, op, "%v", err)
		}
		if level != "" {
			s.levelFor(ctx, snap, nil, level) // a raw session's level is its own: it waits for it
		}
		const reason = "the caller cancelled the call"
		sentOn = snap.session
		var send func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
		if raw := snap.conn.raw(); raw != nil {
			send = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
				return raw.Call(ctx, "tools/call", params, reason)
			}
		} else if hs, ok := snap.conn.rawHTTP(snap.session, s.spec.MaxFrameBytes); ok {
			hs.Name = tool
			send = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
				return hs.Call(ctx, "tools/call", params, reason, rawPeer{s: s, c: snap.conn})
			}
		} else {
			// Only a transport substituted under the manager has none;
			// Options.Dial already sends those calls to Call.
			return false, errorf(CodeInvocationFailed, s.name, op, "the connection has no raw call channel")
		}
		result, err = send(ctx, params)
		if err == nil && sessionless && rawrpc.InputRequired(result) {
			// The server asks something before it answers: the go-sdk's
			// client answers and sends the later rounds, as it does on
			// the go-sdk path, from the round already answered.
			s.m.log.Debug("raw call handed to the go-sdk: the server asks for input", "server", s.name, "tool", tool)
			var res *mcp.CallToolResult
			res, err = s.continueRaw(ctx, snap, tool, callArgs, sent, version, result, send)
			if err == nil {
				result, err = json.Marshal(res)
			}
			if err != nil {
				result = nil
				return false, invocationFailed(s.name, op, s.callFailure(ctx, req, err, snap.conn))
			}
		}
		if err != nil {
			return false, invocationFailed(s.name, op, s.callFailure(ctx, req, s.rawFailure(ctx, snap, err), snap.conn))
		}
		isError, err = rawrpc.IsError(result)
		if err != nil {
			result = nil
			return false, errorf(CodeInvocationFailed, s.name, op, "the server's result is not a JSON object: %v", err)
		}
		snap.conn.noticesBefore(ctx) // what it logged or reported first is published first
		return isError, nil
	}
	err = s.request(ctx, op, opts.FailFast, call)
	if errors.Is(err, ErrNotRaw) {
		return nil, ErrNotRaw
	}
	err = s.againAfterLogin(ctx, op, tool, opts, err, sentOn, func() error {
		result, isError = nil, false
		return s.request(ctx, op, opts.FailFast, call)
	})
	s.callEvent(tool, opts.Client, start, &mcp.CallToolResult{IsError: isError}, err)
	if err != nil {
		return nil, err
	}
	return result, nil
}

// RawCalls reports whether [Manager.CallRaw] makes calls of server now,
// rather than returning ErrNotRaw at once: a caller that must decide
// before it calls (it cannot take a refused call back) asks first. Once
// it has the call, CallRaw still returns ErrNotRaw, before it sends
// anything, for a tool of a 2026-07-28 HTTP server that puts arguments in
// headers.
func (m *Manager) RawCalls(server string) bool {
	if m.opts.Dial != nil {
		return false
	}
	s, _, _ := m.find(server)
	return s != nil && rawTransport(s.spec)
}

// rawTransport reports whether spec's transport is one the raw path
// calls on: a spawned stdio server's, or streamable HTTP.
func rawTransport(spec Spec) bool {
	return spec.Transport == TransportStdio || spec.Transport == TransportHTTP
}

// sessionVersion is the protocol version of snap's session, or "" when
// it has none.
func sessionVersion(snap *snapshot) string {
	if snap.session == nil {
		return ""
	}
	if res := snap.session.InitializeResult(); res != nil {
		return res.ProtocolVersion
	}
	return ""
}

// rawFailure words err, a raw call's failure on snap's connection, as
// the go-sdk's session words that failure, and ends an HTTP session the
// go-sdk would have given up.
func (s *supervisor) rawFailure(ctx context.Context, snap *snapshot, err error) error {
	var rpcErr *rawrpc.Error
	switch {
	case errors.Is(err, rawhttp.ErrBroken) && !errors.Is(err, mcp.ErrSessionMissing):
		s.sessionBroken(snap.session, err)
		return fmt.Errorf("calling %q: %w", "tools/call", err)
	case errors.As(err, &rpcErr):
		// Worded as the go-sdk words a server's error answer.
		return fmt.Errorf("calling %q: %w", "tools/call", &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data})
	case snap.conn.raw() == nil && ctx.Err() == nil:
		return fmt.Errorf("calling %q: %w", "tools/call", err) // as the go-sdk's session words it
	}
	return err
}

// continueRaw ends a raw call of tool on snap's session (of protocol
// version) whose server answered its first round with first, an input
// required result: the connection's go-sdk client answers the input
// requests as on the go-sdk path, and each later round goes to the
// server with send, the raw call's own. args and meta are what the first
// round sent; the later rounds carry them too.
func (s *supervisor) continueRaw(ctx context.Context, snap *snapshot, tool string, args, meta json.RawMessage, version string, first json.RawMessage, send func(context.Context, json.RawMessage) (json.RawMessage, error)) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if len(meta) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(meta, &m); err != nil {
			return nil, err
		}
		params.Meta = make(mcp.Meta, len(m))
		for k, v := range m {
			params.Meta[k] = v
		}
	}
	var failed error // a later round's failure that is no answer of the server's
	res, err := rounds.Continue(ctx, snap.conn.client, version, params, first, func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		res, err := send(ctx, params)
		var rpcErr *rawrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			return nil, &jsonrpc.Error{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
		case err != nil:
			failed = err
		}
		return res, err
	})
	if err != nil && failed != nil {
		return nil, s.rawFailure(ctx, snap, failed)
	}
	return res, err
}

// legacyProtocol reports whether snap's session, if any, is on a
// protocol version before 2026-07-28: one with a log level of its own,
// set with logging/setLevel, rather than one named by each request.
func legacyProtocol(snap *snapshot) bool {
	v := sessionVersion(snap)
	return v == "" || v < string(Protocol20260728)
}

// clientIdent is what the go-sdk's client puts in the _meta of each
// request of protocol 2026-07-28 or later: its information and
// capabilities, as JSON.
type clientIdent struct {
	info, caps json.RawMessage
}

// identOf is the clientIdent of a client of impl declaring caps, as the
// go-sdk encodes them (its capabilities with roots of the second form).
func identOf(impl *mcp.Implementation, caps *mcp.ClientCapabilities) clientIdent {
	info, _ := json.Marshal(impl)
	v2, _ := json.Marshal(struct {
		mcp.ClientCapabilities
		Roots *mcp.RootCapabilities `json:"roots,omitempty"` // in place of the embedded one
	}{*caps, caps.RootsV2})
	return clientIdent{info: info, caps: v2}
}

// sessionlessMeta is meta (a JSON object, or nothing) as the go-sdk's
// client sends a request's _meta on protocol version 2026-07-28 or later:
// with the log level wanted (level, unless ""), and the protocol version
// and the client's information and capabilities where meta has none of
// its own.
func (c *conn) sessionlessMeta(meta json.RawMessage, version string, level mcp.LoggingLevel) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(meta); len(t) > 0 && string(t) != "null" {
		if err := json.Unmarshal(t, &m); err != nil || m == nil {
			return nil, errors.New("_meta must be a JSON object")
		}
	}
	if level != "" {
		m[mcp.MetaKeyLogLevel], _ = json.Marshal(level)
	}
	if _, ok := m[mcp.MetaKeyProtocolVersion]; !ok {
		m[mcp.MetaKeyProtocolVersion], _ = json.Marshal(version)
	}
	if _, ok := m[mcp.MetaKeyClientInfo]; !ok {
		m[mcp.MetaKeyClientInfo] = c.ident.info
	}
	if _, ok := m[mcp.MetaKeyClientCapabilities]; !ok {
		m[mcp.MetaKeyClientCapabilities] = c.ident.caps
	}
	return json.Marshal(m)
}

// raw is the raw call channel of a stdio connection, or nil.
func (c *conn) raw() *rawrpc.Conn {
	if t, ok := c.transport.(*proc.Transport); ok {
		return t.Raw()
	}
	return nil
}

// rawHTTP is the raw call path of a streamable HTTP connection on its
// session cs: the go-sdk transport's own client and endpoint, and the
// session's id and protocol version. It reports false for other
// connections.
func (c *conn) rawHTTP(cs *mcp.ClientSession, maxEvent int) (rawhttp.Session, bool) {
	t, ok := c.transport.(*mcp.StreamableClientTransport)
	if !ok || cs == nil {
		return rawhttp.Session{}, false
	}
	hs := rawhttp.Session{Client: c.httpClient(t), URL: t.Endpoint, ID: cs.ID(), MaxEvent: maxEvent, MaxRetries: t.MaxRetries}
	if res := cs.InitializeResult(); res != nil {
		hs.Protocol = res.ProtocolVersion
	}
	return hs, true
}

// httpClient is the client raw requests on c's streamable transport t go
// through: the go-sdk's, without the counting of its notifications.
func (c *conn) httpClient(t *mcp.StreamableClientTransport) *http.Client {
	switch {
	case c.plain != nil:
		return c.plain
	case t.HTTPClient != nil:
		return t.HTTPClient
	}
	return http.DefaultClient // as the go-sdk does
}

// rawCallParams are the params of a tools/call of tool: its name, the
// arguments and _meta as given (each left out when nil), on one line.
func rawCallParams(tool string, args, meta json.RawMessage) (json.RawMessage, error) {
	name, err := json.Marshal(tool)
	if err != nil {
		return nil, err
	}
	if len(meta) > 0 && string(meta) != "null" && (!json.Valid(meta) || meta[0] != '{') {
		return nil, errors.New("_meta must be a JSON object")
	}
	// Messages are newline-delimited: JSON that a client sent indented
	// is sent compacted (a newline is only ever whitespace in JSON).
	args, meta = oneLine(args), oneLine(meta)
	p := make([]byte, 0, 32+len(name)+len(args)+len(meta))
	p = append(p, `{"name":`...)
	p = append(p, name...)
	if len(args) > 0 {
		p = append(p, `,"arguments":`...)
		p = append(p, args...)
	}
	if len(meta) > 0 && string(meta) != "null" {
		p = append(p, `,"_meta":`...)
		p = append(p, meta...)
	}
	return append(p, '}'), nil
}

// withProgressToken is meta, a JSON object or nothing, with its
// progressToken set to token (as the go-sdk sets a request's, in place
// of the caller's). Anything else is meta as it is, for rawCallParams to
// refuse.
func withProgressToken(meta json.RawMessage, token string) json.RawMessage {
	m := map[string]json.RawMessage{}
	if t := bytes.TrimSpace(meta); len(t) > 0 && string(t) != "null" {
		if json.Unmarshal(t, &m) != nil || m == nil {
			return meta
		}
	}
	m["progressToken"], _ = json.Marshal(token)
	out, err := json.Marshal(m)
	if err != nil {
		return meta
	}
	return out
}

// oneLine is valid JSON v without line breaks.
func oneLine(v json.RawMessage) json.RawMessage {
	if !bytes.ContainsAny(v, "\r\n") {
		return v
	}
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}
