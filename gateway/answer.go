package gateway

import (
	"context"
	"fmt"

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
// Requests go to the client untouched and its answers and errors come
// back as they are: the client validates what it is sent, and the
// manager what it answers.
type clientAnswerer struct {
	ss    *mcp.ServerSession
	label string // the client, for errors
	caps  *mcp.ClientCapabilities
	// call is the context of the client's tools/call: requests to the
	// client carry its values (the SDK finds the call's stream by them).
	call context.Context
	// trip, if set, is the client's call on 2026-07-28: what the server
	// asks goes out as input requests.
	trip *roundTrip
}

func newClientAnswerer(call context.Context, s *session, caps *mcp.ClientCapabilities, trip *roundTrip) *clientAnswerer {
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	return &clientAnswerer{ss: s.ss, label: s.label, caps: caps, call: call, trip: trip}
}

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
	if mode := elicitMode(p); !canElicit(a.caps.Elicitation, mode) {
		return nil, fmt.Errorf("client %s cannot answer %s elicitation: %w", a.label, mode, ask.ErrNoAnswer)
	}
	if a.trip != nil {
		return answerAs[*mcp.ElicitResult](a.trip.ask(ctx, p))
	}
	ctx, cancel := a.linked(ctx)
	defer cancel()
	return a.ss.Elicit(ctx, p)
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
	if a.trip != nil {
		return answerAs[*mcp.CreateMessageWithToolsResult](a.trip.ask(ctx, p))
	}
	ctx, cancel := a.linked(ctx)
	defer cancel()
	return a.ss.CreateMessageWithTools(ctx, p)
}

func (a *clientAnswerer) ListRoots(ctx context.Context, _ ask.From) ([]*mcp.Root, error) {
	if a.caps.RootsV2 == nil {
		return nil, fmt.Errorf("client %s declared no roots: %w", a.label, ask.ErrNoAnswer)
	}
	var res *mcp.ListRootsResult
	var err error
	if a.trip != nil {
		res, err = answerAs[*mcp.ListRootsResult](a.trip.ask(ctx, &mcp.ListRootsParams{}))
	} else {
		ctx, cancel := a.linked(ctx)
		defer cancel()
		res, err = a.ss.ListRoots(ctx, nil)
	}
	if err != nil {
		return nil, err
	}
	return res.Roots, nil
}

// elicitMode is the mode of an elicitation, inferred as the SDK does when
// the server gave none.
func elicitMode(p *mcp.ElicitParams) string {
	switch {
	case p == nil:
		return "form"
	case p.Mode != "":
		return p.Mode
	case p.URL != "" || p.ElicitationID != "":
		return "url"
	}
	return "form"
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

// linked is the context of one request to the client: it has the call's
// values and ends when the server's request (ctx) does or the client's
// call does. On streamable HTTP the SDK sends a request made with the
// context of a request it is handling on that request's response stream,
// which the client is reading; made with any other, it would go to the
// standalone stream, which a client need not open.
func (a *clientAnswerer) linked(ctx context.Context) (context.Context, context.CancelFunc) {
	return linked(a.call, ctx, a.call)
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
