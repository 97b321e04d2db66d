package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/argschema"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// toolHandler forwards calls of one exposed tool to its server.
func (ep *endpoint) toolHandler(server, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return ep.forward(ctx, req, server, tool)
	}
}

// forward calls server's tool for a client. Whatever goes wrong on the way
// (the server down, its circuit open, a timeout, arguments its schema
// rejects) comes back as an isError result whose text names the server
// and the operation: the model reads it, and no request ever hangs past
// the call's timeout. What the server asks during the call goes to the
// client (clientAnswerer). A call cancelled because its client ended the
// session gets a JSON-RPC error instead: there is no model to read it.
func (ep *endpoint) forward(ctx context.Context, req *mcp.CallToolRequest, server, tool string) (*mcp.CallToolResult, error) {
	op := fmt.Sprintf("server %q: tools/call %q", server, tool)
	// The arguments go on as the client sent them: the manager decodes
	// them once, to validate them, and forwards these very bytes. Only
	// what is not an object is decoded here, for its error.
	var args json.RawMessage
	if raw := bytes.TrimSpace(req.Params.Arguments); len(raw) > 0 && string(raw) != "null" {
		if !json.Valid(raw) {
			return errorResult(fmt.Sprintf("%s: %s: the arguments are not valid JSON. Retrying the same arguments will not help.", manager.CodeInvalidArguments, op)), nil
		}
		if raw[0] != '{' {
			var v any
			_ = json.Unmarshal(raw, &v) // valid, as just checked
			return errorResult(fmt.Sprintf("%s: %s: arguments must be a JSON object of named arguments, got %s. Retrying with the same arguments will not help; send an object.",
				manager.CodeInvalidArguments, op, argschema.Describe(v))), nil
		}
		args = req.Params.Arguments
	}
	if req.Session == nil {
		return errorResult(op + ": no client session"), nil
	}
	ctx = traceContext(ctx, req.Params.Meta)
	s := ep.g.clients.session(ep, req.Session)
	c := upstreamCall{op: op, name: server + "." + tool, args: args, token: req.Params.GetProgressToken()}
	if req.ProtocolVersion() >= multiRoundTripVersion {
		c.levelInMeta = true
		c.logLevel, _ = req.Params.Meta[mcp.MetaKeyLogLevel].(string)
		if s.sessionless {
			// The request's session ends with it; the call may not.
			h, release, err := ep.g.clients.holder(ep, s)
			if err != nil {
				return errorResult(errorText(fmt.Errorf("%s: %w", op, err))), nil
			}
			defer release() // once the call or this request counts on h
			s = h
		}
		return ep.g.roundTrip(ctx, req, s, c, op), nil
	}
	if err := s.begin(); err != nil {
		return errorResult(errorText(fmt.Errorf("%s: %w", op, err))), nil
	}
	// Counted until the answer has gone out (see session.done): once this
	// handler returns, s.done is arranged to run when ctx ends.
	defer func() { context.AfterFunc(ctx, s.done) }()
	c.life = ep.g.life(ctx, req.Extra)
	// call ends as the call returns, before its result goes out: the
	// answerer, which the manager may keep, asks outside the call from
	// then on.
	call, over := context.WithCancel(ctx)
	defer over()
	res := ep.g.call(call, s, c, newClientAnswerer(call, s, req.ClientCapabilities(), nil))
	if cause := context.Cause(s.ctx); (res == nil || res.IsError) && cause != nil && !errors.Is(cause, ErrShuttingDown) {
		return nil, &jsonrpc.Error{Code: CodeRefused, Message: op + ": " + cause.Error() + "; the call was cancelled upstream"}
	}
	return res, nil
}

// upstreamCall is what a client's tools/call asks of the source.
type upstreamCall struct {
	op   string // `server "s": tools/call "t"`, for errors
	name string // "server.tool"
	// args are the arguments as the client sent them (an object), or nil
	// for none.
	args  json.RawMessage
	token any // the client's progress token, if any
	// to, if not nil, tells where progress and log messages go instead
	// of the session's own: for a sessionless client, the request of its
	// that waits on the call now (see roundTrip.waiting), if any.
	to func() (context.Context, *mcp.ServerSession)
	// levelInMeta is set for a call of 2026-07-28 or later, whose
	// requests say in their _meta (logLevel) the level at which they
	// want the server's log messages; logging/setLevel does not set it.
	levelInMeta bool
	logLevel    string
	// life, if not nil, is the HTTP request whose end cancels the call
	// (see requestLives).
	life context.Context
}

// call makes a client's call upstream, with progress going back under the
// client's token. It ends when the client's session does, or the HTTP
// request carrying it.
func (g *Gateway) call(ctx context.Context, s *session, c upstreamCall, a ask.Answerer) *mcp.CallToolResult {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })()
	if c.life != nil {
		defer context.AfterFunc(c.life, func() { cancel(errRequestGone) })()
	}
	defer g.relayLogs(ctx, s, c)() // the server's logs go out before the result
	opts := manager.CallOptions{FailFast: true, Client: s.label, Answerer: a, LogLevel: s.callLevel(c)}
	var fw *progressForwarder
	if c.token != nil {
		fw = newProgressForwarder(ctx, true, sessionProgress(ctx, s.ss, c.to, c.token))
		opts.Progress = fw.send
	}
	res, err := g.src.Call(ctx, c.name, c.args, opts)
	if fw != nil {
		fw.finish() // the progress it has goes out before the result
	}
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrShuttingDown) {
			return errorResult(c.op + ": " + ErrShuttingDown.Error() + ": the call did not finish within the shutdown grace and was cancelled upstream. " +
				"It may or may not have done its work; retrying once mcpvisor is back may succeed.")
		}
		return errorResult(errorText(err))
	}
	return res
}

// roundTrip serves a call of a client on 2026-07-28 or later. Its first
// request starts the call upstream on its own goroutine; that and every
// retry carrying the request state return the result, or what the server
// has asked meanwhile (see roundTrip).
func (g *Gateway) roundTrip(ctx context.Context, req *mcp.CallToolRequest, s *session, c upstreamCall, op string) *mcp.CallToolResult {
	p := req.Params
	var rt *roundTrip
	if p.RequestState != "" {
		rt = s.trip(p.RequestState)
		if rt == nil || rt.tool != p.Name {
			return errorResult(op + ": the request state names no call of this client that waits for answers (it ended, or was given up); call again without it")
		}
		defer rt.waitOn(ctx, req.Session)() // before the call has the answers
		rt.answer(p.InputResponses)
	} else {
		if err := s.begin(); err != nil {
			return errorResult(errorText(fmt.Errorf("%s: %w", op, err)))
		}
		if rt = s.addTrip(ctx, p.Name); rt == nil {
			s.done()
			return errorResult(op + ": " + errClientGone.Error())
		}
		defer rt.waitOn(ctx, req.Session)()
		if s.isHolder() {
			// The session of each request ends with it.
			c.to = rt.waiting
		}
		a := newClientAnswerer(ctx, s, req.ClientCapabilities(), rt)
		go func() {
			defer s.done()
			rt.finish(g.call(rt.ctx, s, c, a))
		}()
	}
	if s.hold() {
		defer func() { context.AfterFunc(ctx, s.done) }() // once answered: see session.done
	}
	rt.busy()
	res, finished := rt.await(ctx)
	if finished {
		s.dropTrip(rt)
	} else if d := time.Duration(g.holderIdle.Load()); s.isHolder() && d > 0 {
		// Nothing else ends a trip its sessionless client never comes
		// back to.
		rt.idleFor(d, func() { s.expireTrip(rt) })
	}
	return res
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// traceContext continues the client's W3C trace context, sent in the
// request's _meta, so that mcpvisor's span and the upstream call join the
// client's trace.
func traceContext(ctx context.Context, meta mcp.Meta) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := meta[k].(string); ok {
			carrier[k] = v
		}
	}
	if len(carrier) == 0 {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

func (ep *endpoint) promptHandler(server, prompt string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (res *mcp.GetPromptResult, err error) {
		err = ep.upstream(ctx, req.Session, req.Extra, func(ctx context.Context) (err error) {
			res, err = ep.g.src.GetPrompt(ctx, server+"."+prompt, req.Params.Arguments, 0)
			return err
		})
		if err != nil {
			return nil, rpcError(err)
		}
		return res, nil
	}
}

func (ep *endpoint) resourceHandler(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (res *mcp.ReadResourceResult, err error) {
		err = ep.upstream(ctx, req.Session, req.Extra, func(ctx context.Context) (err error) {
			res, err = ep.g.src.ReadResource(ctx, req.Params.URI, server, 0)
			return err
		})
		if err != nil {
			return nil, rpcError(err)
		}
		return res, nil
	}
}

// upstream runs f, a client's request of a server other than a call:
// counted among the client's requests in flight (and refused beyond its
// limit), and cancelled when the client leaves, as a call is.
func (ep *endpoint) upstream(ctx context.Context, ss *mcp.ServerSession, extra *mcp.RequestExtra, f func(context.Context) error) error {
	if ss == nil {
		return f(ctx)
	}
	s := ep.g.clients.session(ep, ss)
	if err := s.begin(); err != nil {
		return refused(err)
	}
	defer func() { context.AfterFunc(ctx, s.done) }() // once answered: see session.done
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })()
	if life := ep.g.life(ctx, extra); life != nil {
		defer context.AfterFunc(life, func() { cancel(errRequestGone) })()
	}
	return f(ctx)
}

// unknownTools answers a call of a tool the endpoint does not list (yet):
// a server that has not connected has no tools to list, and a client that
// calls one anyway gets the server's own answer, "not connected: …, the
// next attempt is in …", rather than the SDK's bare "unknown tool". While
// servers have not had their first say, the call waits for them first,
// as a list would.
func (ep *endpoint) unknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		if _, listed := ep.routes.Load().tools[call.Params.Name]; listed || ep.isStatus(call) {
			return next(ctx, method, req)
		}
		// Called before its server has had its first say, the tool may
		// be listed once it has (a name shortened or renamed cannot be
		// routed by its prefix alone).
		ep.settled(ctx)
		if _, listed := ep.routes.Load().tools[call.Params.Name]; listed {
			return next(ctx, method, req)
		}
		server, tool, ok := ep.route(call.Params.Name)
		if !ok {
			return next(ctx, method, req)
		}
		res, err := ep.forward(ctx, call, server, tool)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
}

// route finds the server an unlisted tool name points at: on a server's
// endpoint, that server; on /mcp, the server whose prefix starts the name.
func (ep *endpoint) route(name string) (server, tool string, ok bool) {
	switch ep.sel {
	case oneServer:
		return ep.name, name, !ep.g.currentView().rules[ep.name].Hidden(name)
	case everything:
		prefix, tool, found := strings.Cut(name, "__")
		if !found {
			return "", "", false
		}
		v := ep.g.currentView()
		server, ok := v.serverOfPrefix(prefix)
		// A tool the user hides is not offered under any name.
		return server, tool, ok && !v.rules[server].Hidden(tool)
	}
	return "", "", false
}
