package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// clientAnswerer answers what a server asks during one call by asking the
// client that made the call, on that client's own session, and only what
// the client declared it can answer: for anything else it returns
// ask.ErrNoAnswer and the manager asks the host instead.
//
// A client on a protocol before 2026-07-28 is sent the request itself
// (elicitation/create, sampling/createMessage, roots/list), on the
// response stream of its tools/call, and the request is cancelled when the
// server's is, or when the client cancels its call. A client on
// 2026-07-28 or later cannot be sent requests (the SDK refuses them): it
// gets what the server asks as the input requests of its call's result,
// and answers by calling again (see roundTrip).
//
// What a shared server asks outside any call, the manager asks of the
// client only while it is the gateway's only client (SoleClient), unless
// the server is trusted with questions = "caller".
//
// The manager may keep a per-client session's answerer after its call
// returned, for what the server asks between calls: the client is then
// asked on its session, outside any call's stream, if it can still be
// reached; one on 2026-07-28 cannot be.
//
// Requests go to the client untouched and its answers and errors come
// back as they are: the client validates what it is sent, and the
// manager what it answers.
type clientAnswerer struct {
	s       *session
	ss      *mcp.ServerSession
	label   string          // the client, for errors
	session context.Context // ends when the client's session does
	caps    *mcp.ClientCapabilities
	// call has the values of the client's tools/call, which requests to
	// the client carry (the SDK finds the call's stream by them), and ends
	// when the call returns.
	call context.Context
	// trip, if set, is the client's call on 2026-07-28: what the server
	// asks goes out as input requests.
	trip *roundTrip
	// fast, if set, is the response of the client's call on the fast
	// path: what the server asks during the call goes out on it (see
	// askFast).
	fast *fastStream
}

func newClientAnswerer(call context.Context, s *session, caps *mcp.ClientCapabilities, trip *roundTrip) *clientAnswerer {
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	return &clientAnswerer{s: s, ss: s.ss, label: s.label, session: s.ctx, caps: caps, call: call, trip: trip}
}

// onFastCall reports whether what the server asks now goes out on the
// response of the client's fast call.
func (a *clientAnswerer) onFastCall() bool { return a.fast != nil && a.call.Err() == nil }

// SoleClient reports whether the client is the only one the gateway
// serves now: what a shared server asks outside any call can then be
// nobody else's (see manager.QuestionsOwn). Over stdio there is only ever
// one.
func (a *clientAnswerer) SoleClient() bool { return a.s.table.count() == 1 }

// OpensURLs reports whether the client declared URL-mode elicitation: a
// login its calls need is sent to it as a link to open.
func (a *clientAnswerer) OpensURLs() bool { return canElicit(a.caps.Elicitation, "url") }

// Offers is what the client declared.
func (a *clientAnswerer) Offers() ask.Kind {
	var k ask.Kind
	if a.caps.Elicitation != nil {
		k |= ask.Elicitation
	}
	if a.caps.Sampling != nil {
		k |= ask.Sampling
	}
	if a.caps.RootsV2 != nil {
		k |= ask.Roots
	}
	return k
}

func (a *clientAnswerer) Elicit(ctx context.Context, _ ask.From, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if mode := ask.Mode(p); !canElicit(a.caps.Elicitation, mode) {
		return nil, fmt.Errorf("client %s cannot answer %s elicitation: %w", a.label, mode, ask.ErrNoAnswer)
	}
	q := *p
	defer a.s.relayProgress(ctx, &q.Meta)()
	if a.trip != nil {
		return answerAs[*mcp.ElicitResult](a.trip.ask(ctx, &q))
	}
	ctx, cancel, err := a.reach(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if a.onFastCall() {
		q.Mode = ask.Mode(&q) // as the go-sdk completes it
		var res mcp.ElicitResult
		if err := a.s.askFast(ctx, a.fast, "elicitation/create", &q, &res); err != nil {
			return nil, err
		}
		return &res, nil
	}
	res, err := a.ss.Elicit(ctx, &q)
	return res, a.undelivered(err)
}

// CreateMessage asks the client for a completion. The SDK's with-tools
// request is the plain one on the wire when every message has one
// content block, and its result keeps every block the client sends, so
// it serves both.
func (a *clientAnswerer) CreateMessage(ctx context.Context, _ ask.From, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	switch {
	case a.caps.Sampling == nil:
		return nil, fmt.Errorf("client %s declared no sampling: %w", a.label, ask.ErrNoAnswer)
	case p != nil && len(p.Tools) > 0 && a.caps.Sampling.Tools == nil:
		// A client that did not declare sampling.tools must not be sent tools.
		return nil, fmt.Errorf("client %s declared no sampling with tools: %w", a.label, ask.ErrNoAnswer)
	}
	if p == nil {
		p = &mcp.CreateMessageWithToolsParams{}
	}
	q := *p
	defer a.s.relayProgress(ctx, &q.Meta)()
	if a.trip != nil {
		return answerAs[*mcp.CreateMessageWithToolsResult](a.trip.ask(ctx, &q))
	}
	ctx, cancel, err := a.reach(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if a.onFastCall() {
		if q.Messages == nil {
			q.Messages = []*mcp.SamplingMessageV2{} // as the go-sdk sends none
		}
		var res mcp.CreateMessageWithToolsResult
		if err := a.s.askFast(ctx, a.fast, "sampling/createMessage", &q, &res); err != nil {
			return nil, err
		}
		return &res, nil
	}
	res, err := a.ss.CreateMessageWithTools(ctx, &q)
	return res, a.undelivered(err)
}

func (a *clientAnswerer) ListRoots(ctx context.Context, _ ask.From) ([]*mcp.Root, error) {
	if a.caps.RootsV2 == nil {
		return nil, fmt.Errorf("client %s declared no roots: %w", a.label, ask.ErrNoAnswer)
	}
	var res *mcp.ListRootsResult
	if a.trip != nil {
		var err error
		if res, err = answerAs[*mcp.ListRootsResult](a.trip.ask(ctx, &mcp.ListRootsParams{})); err != nil {
			return nil, err
		}
		return res.Roots, nil
	}
	ctx, cancel, err := a.reach(ctx)
	if err != nil {
		return nil, err
	}
	defer cancel()
	if a.onFastCall() {
		res = &mcp.ListRootsResult{}
		if err := a.s.askFast(ctx, a.fast, "roots/list", &mcp.ListRootsParams{}, res); err != nil {
			return nil, err
		}
		return res.Roots, nil
	}
	if res, err = a.ss.ListRoots(ctx, nil); err != nil {
		return nil, a.undelivered(err)
	}
	return res.Roots, nil
}

// canElicit reports whether a client that declared c can answer an
// elicitation of mode. A bare {} declares form, as it did before modes.
func canElicit(c *mcp.ElicitationCapabilities, mode string) bool {
	switch {
	case c == nil:
		return false
	case mode == "url":
		return c.URL != nil
	}
	return c.Form != nil || c.URL == nil
}

// answerAs is the answer to an input request as the type it must have.
func answerAs[T mcp.InputResponse](r mcp.InputResponse, err error) (T, error) {
	var want T
	if err != nil {
		return want, err
	}
	got, ok := r.(T)
	if !ok {
		return want, fmt.Errorf("the client answered with %T, want %T", r, want)
	}
	return got, nil
}

// reach is the context of one request to the client, or ErrNoAnswer if
// its session has ended. During the call, it has the call's values and
// ends when the server's request (ctx) does or the call does: on
// streamable HTTP the SDK sends a request made with the context of a
// request it is handling on that request's response stream, which the
// client is reading; made with any other, it goes to the standalone
// stream, which a client need not open. After the call, it goes there.
func (a *clientAnswerer) reach(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if a.session.Err() != nil {
		return nil, nil, fmt.Errorf("client %s has gone: %w", a.label, ask.ErrNoAnswer)
	}
	if a.call.Err() == nil {
		ctx, cancel := linked(a.call, ctx, a.call, a.session)
		return ctx, cancel, nil
	}
	ctx, cancel := linked(context.Background(), ctx, a.session)
	return ctx, cancel, nil
}

// codeRejected is the code of the SDK's error for a message its transport
// could not deliver (a request with no stream open to carry it).
const codeRejected = -32005

// undelivered makes a request that never reached the client (its session
// closed, or no stream to send it on) ErrNoAnswer, so that the host may
// answer; what the client answered is left as it is.
func (a *clientAnswerer) undelivered(err error) error {
	var je *jsonrpc.Error
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.As(err, &je) && je.Code == codeRejected {
		return fmt.Errorf("client %s could not be sent the request: %v: %w", a.label, err, ask.ErrNoAnswer)
	}
	return err
}

// linked returns a context with the values of values that ends when any
// of ends does, with its cause.
func linked(values context.Context, ends ...context.Context) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(context.WithoutCancel(values))
	stops := make([]func() bool, len(ends))
	for i, end := range ends {
		stops[i] = context.AfterFunc(end, func() { cancel(context.Cause(end)) })
	}
	return out, func() {
		for _, stop := range stops {
			stop()
		}
		cancel(nil)
	}
}

// formsAsSent keeps the go-sdk's server side from judging a form's answer
// when a server's question goes to a client: after the client answers,
// ServerSession.Elicit checks the answer against the form with the SDK's
// own rules, which refuse some valid forms (a titled multi-select whose
// items are typed), and fills in the form's defaults. The answer is the
// server's to judge, and the manager checks it against the form as the
// server wrote it and fills in the defaults (package ask): with the form
// taken off the request once it has been sent, the SDK skips both.
func formsAsSent(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if p, ok := req.GetParams().(*mcp.ElicitParams); ok && p != nil {
			p.RequestedSchema = nil // the SDK's copy, or the answerer's
		}
		return res, err
	}
}
