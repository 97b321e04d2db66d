package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a server asks of its client (elicitation, sampling, roots) goes,
// in order, to: the caller whose call carries the request (2026-07-28
// input requests come back inside the call's result, in the call's
// context; over streamable HTTP, a request on the response stream of the
// call, see streams.go), the callers with calls in flight on the session
// when the request can only be theirs (below), the client owning a
// per-client session (its last answerer), the server's own roots (its
// spec), and the host's answerer. See package ask.
//
// On a shared session a request that no call carries cannot say whose it
// is: it may come after the call that led to it ended, while another
// client's call is in flight. It goes to the callers in flight only when
// their client is the only client the host serves (ask.SoleClient), or
// when the server is trusted to ask only about calls in flight
// (QuestionsCaller) and they are all one client's. Otherwise no client is
// asked: the host may answer, or the server is told the two ways out.

// answers is who may answer what servers ask: the host's answerer and the
// kinds callers may answer.
type answers struct {
	host    atomic.Pointer[ask.Answerer]
	callers atomic.Uint32 // ask.Kind
}

// SetAnswerer sets the host's answerer (nil: none): what a server asks
// that no caller answers goes to it (Lua handlers, the person at the REPL). Its offers
// are read at each connection: a kind it starts offering later is
// declared to sessions that connect afterwards.
func (m *Manager) SetAnswerer(a ask.Answerer) {
	if a == nil {
		m.answers.host.Store(nil) // nobody: the host stopped answering
		return
	}
	m.answers.host.Store(&a)
}

// CallersAnswer declares that callers passing [CallOptions.Answerer] may
// answer kinds: sessions that connect afterwards declare those
// capabilities to their servers. The gateway declares what its clients
// may answer.
func (m *Manager) CallersAnswer(kinds ask.Kind) {
	for {
		old := m.answers.callers.Load()
		if m.answers.callers.CompareAndSwap(old, old|uint32(kinds)) {
			return
		}
	}
}

// offers is what a new session of s declares it can answer.
func (m *Manager) offers(s *supervisor) ask.Kind {
	k := ask.Kind(m.answers.callers.Load())
	if h := m.answers.host.Load(); h != nil {
		k |= (*h).Offers()
	}
	if len(s.spec.Roots) > 0 {
		k |= ask.Roots
	}
	return k
}

// errEmptyAnswer is an answerer's nil result without an error.
var errEmptyAnswer = errors.New("the answer was empty")

// askingKey is the context key of a call's answerer.
type askingKey struct{}

// asking registers the answerer of call req (if the caller gave one) and
// returns the call's context carrying it.
func (s *supervisor) asking(ctx context.Context, req uint64, opts CallOptions) context.Context {
	if opts.Answerer == nil {
		return ctx
	}
	c := &ask.Candidate{Answerer: opts.Answerer, By: "client", Client: opts.Client}
	s.inflight.AnswerBy(req, c, s.home != nil)
	return context.WithValue(ctx, askingKey{}, c)
}

// askers is who may answer one request, in the order they are asked, and
// how many clients with calls in flight were left out because the request
// could not be shown to be theirs.
type askers struct {
	line     []ask.Candidate
	withheld int
}

// candidates lists who may answer a request that arrived with ctx.
func (s *supervisor) candidates(ctx context.Context) askers {
	var a askers
	carried, _ := ctx.Value(askingKey{}).(*ask.Candidate)
	if carried != nil {
		a.line = append(a.line, *carried)
	}
	// The callers in flight that it can be shown to belong to, then the
	// owner of a client's session.
	callers, withheld := s.inflight.Answerers(s.spec.Questions == QuestionsCaller)
	a.line = append(a.line, callers...)
	if carried == nil {
		a.withheld = withheld
	}
	if len(s.spec.Roots) > 0 {
		a.line = append(a.line, ask.Candidate{Answerer: ask.FixedRoots(s.spec.Roots), By: "server", Client: s.owner})
	}
	if h := s.m.answers.host.Load(); h != nil {
		a.line = append(a.line, ask.Candidate{Answerer: *h, By: "host", Client: s.owner})
	}
	return a
}

// answering is the client middleware that answers elicitation and roots
// requests itself: the SDK's own handling refuses some valid elicitation
// forms before any handler runs, and lists only roots fixed in advance.
// Answers are checked here instead.
func (s *supervisor) answering(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.ElicitRequest:
			if r.Params != nil {
				ctx = s.m.streams.carried(ctx, r.Params.Meta)
			}
			res, err := s.elicit(reporting(ctx, r.Session, r.Params), r.Params)
			if err != nil {
				return nil, err
			}
			return res, nil
		case *mcp.ListRootsRequest:
			if r.Params != nil {
				ctx = s.m.streams.carried(ctx, r.Params.Meta)
			}
			res, err := s.listRoots(ctx)
			if err != nil {
				return nil, err
			}
			return res, nil
		}
		return next(ctx, method, req)
	}
}

// reporting gives the answerers of a request that asked for progress (it
// carries a progress token) a way to send it back to the server.
func reporting(ctx context.Context, cs *mcp.ClientSession, p interface{ GetProgressToken() any }) context.Context {
	token := p.GetProgressToken()
	if token == nil || cs == nil {
		return ctx
	}
	return ask.WithReporter(ctx, func(ctx context.Context, progress, total float64, message string) {
		_ = cs.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: progress, Total: total, Message: message})
	})
}

// elicitationTime is the least an elicitation may wait for its answer: a
// person reads the question and fills the form in. The server cancels
// its request if it stops waiting sooner.
const elicitationTime = 10 * time.Minute

// elicit answers elicitation/create.
func (s *supervisor) elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	ctx, cancel := context.WithTimeout(ctx, max(s.spec.Timeouts.Request, elicitationTime))
	defer cancel()
	var res *mcp.ElicitResult
	var by ask.Candidate
	who := s.candidates(ctx)
	err := ask.CheckForm(p) // before anyone, or any validator, sees it
	if err == nil {
		by, err = ask.First(who.line, ask.Elicitation, func(c ask.Candidate) (err error) {
			res, err = c.Answerer.Elicit(ctx, s.from(c), p)
			if err == nil {
				res = ask.WithDefaults(p, res)
				err = ask.CheckElicitation(p, res)
			}
			return err
		})
	}
	mode := ask.Mode(p)
	if err == nil && mode == "url" && res.Content != nil {
		// A URL's answer carries no content: what the person typed stays
		// with the site.
		res = &mcp.ElicitResult{Meta: res.Meta, Action: res.Action}
	}
	f := Asked{Of: events.KindElicitation, Mode: mode, Message: p.Message}
	if err == nil {
		f.Action = string(res.Action)
	}
	if err = s.asked(ctx, f, by, who.withheld, err); err != nil {
		return nil, err
	}
	return res, nil
}

// sample answers sampling/createMessage. The request's messages are
// logged at DEBUG only: they are the user's conversation.
func (s *supervisor) sample(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.spec.Timeouts.Request)
	defer cancel()
	s.m.log.Debug("sampling request", "server", s.name, "messages", p.Messages, "system_prompt", p.SystemPrompt)
	var res *mcp.CreateMessageWithToolsResult
	who := s.candidates(ctx)
	by, err := ask.First(who.line, ask.Sampling, func(c ask.Candidate) (err error) {
		res, err = c.Answerer.CreateMessage(ctx, s.from(c), p)
		if err == nil && res == nil {
			err = errEmptyAnswer
		}
		return err
	})
	f := Asked{Of: events.KindSampling}
	if err == nil {
		f.Model = res.Model
	}
	if err = s.asked(ctx, f, by, who.withheld, err); err != nil {
		return nil, err
	}
	return res, nil
}

// listRoots answers roots/list.
func (s *supervisor) listRoots(ctx context.Context) (*mcp.ListRootsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.spec.Timeouts.Request)
	defer cancel()
	roots, by, withheld, err := s.askRoots(ctx)
	if err = s.asked(ctx, Asked{Of: events.KindRoots, Roots: len(roots)}, by, withheld, err); err != nil {
		return nil, err
	}
	if roots == nil {
		roots = []*mcp.Root{}
	}
	return &mcp.ListRootsResult{Roots: roots}, nil
}

// askRoots asks the candidates for the roots and says who answered, and
// how many clients were not asked (see askers).
func (s *supervisor) askRoots(ctx context.Context) (roots []*mcp.Root, by ask.Candidate, withheld int, err error) {
	who := s.candidates(ctx)
	by, err = ask.First(who.line, ask.Roots, func(c ask.Candidate) (err error) {
		roots, err = c.Answerer.ListRoots(ctx, s.from(c))
		return err
	})
	return roots, by, who.withheld, err
}

func (s *supervisor) from(c ask.Candidate) ask.From {
	return ask.From{Server: s.name, Client: c.Client}
}

// asked publishes the event of one answered (or unanswered) request and
// returns the error the server gets, if any; withheld is how many
// clients with calls in flight were not asked (see askers).
func (s *supervisor) asked(ctx context.Context, f Asked, by ask.Candidate, withheld int, err error) error {
	if by.By != "" {
		f.AnsweredBy, f.Client = by.By, by.Client
	}
	if err == nil {
		s.emit(f)
		return nil
	}
	kind := f.Of
	what := string(kind)
	var rpcErr *jsonrpc.Error
	switch {
	case errors.Is(err, ask.ErrNoAnswer) && withheld > 0:
		f.ClientsNotAsked = withheld
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"mcpvisor: %s of server %q was asked of no client: it came outside any call, and %s calls in flight on the server's shared session, so it cannot be told whose it is (and no handler of the host answered); "+
				"to have it asked, declare the server with session = \"per_client\" (a session of its own for each client) or questions = \"caller\" (trust it to ask only about the calls in flight)",
			what, s.name, plural(withheld, "one client has", fmt.Sprintf("%d clients have", withheld)))}
	case errors.Is(err, ask.ErrNoAnswer):
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(
			"mcpvisor: nobody can answer %s for server %q (no client that supports it has a call in flight, and no handler of the host answered)", what, s.name)}
	case ctx.Err() != nil && (errors.Is(err, ctx.Err()) || errors.Is(context.Cause(ctx), context.DeadlineExceeded)):
		limit, why := s.spec.Timeouts.Request, "timeouts.request"
		if kind == events.KindElicitation && limit < elicitationTime {
			limit, why = elicitationTime, "the least a person is given"
		}
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
			"mcpvisor: no answer to %s within %s (%s of server %q)", what, limit, why, s.name)}
	case errors.As(err, &rpcErr):
	default:
		rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("mcpvisor: %s for server %q: %v", what, s.name, err)}
	}
	f.Error = rpcErr.Message
	s.emit(f)
	return rpcErr
}

// RootsChanged tells every connected server that declared roots that the
// host's roots changed (notifications/roots/list_changed); each asks
// again. It does not wait for them.
func (m *Manager) RootsChanged() {
	for _, s := range m.supervisors() {
		s.rootsChanged()
		if s.clients != nil {
			for _, c := range s.clients.list() {
				c.rootsChanged()
			}
		}
	}
}

// rootsChanged tells s's session's roots worker, if it has one, that the
// roots may have changed.
func (s *supervisor) rootsChanged() {
	if c := s.snap.Load().conn; c != nil {
		c.roots.changed()
	}
}

// clientRoots keeps one connection's SDK client's list of roots: the SDK
// answers a 2026-07-28 server's question for roots from that list, and
// notifies the server (roots/list_changed) when it changes. One worker
// goroutine of the connection owns the list; it asks the answerers
// (possibly Lua) whenever it is kicked, and once at the start.
type clientRoots struct {
	kick chan struct{} // capacity 1; nil when the session declared no roots
	uris []string      // owned by the worker
}

// start starts the worker of c's roots, which ends with ctx (the
// session's); close waits for it.
func (r *clientRoots) start(ctx context.Context, s *supervisor, c *conn) {
	r.kick = make(chan struct{}, 1)
	r.kick <- struct{}{}
	c.requests.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-r.kick:
				r.update(ctx, s, c.client)
			}
		}
	})
}

// changed kicks the worker; repeated kicks coalesce.
func (r *clientRoots) changed() {
	if r.kick == nil {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// update replaces the client's roots with the current answer, which
// notifies the server.
func (r *clientRoots) update(ctx context.Context, s *supervisor, client *mcp.Client) {
	ctx, cancel := context.WithTimeout(ctx, rootsUpdateTime)
	defer cancel()
	roots, _, _, err := s.askRoots(ctx)
	if err != nil && !errors.Is(err, ask.ErrNoAnswer) {
		s.m.log.Warn("roots not updated", "server", s.name, "error", s.hide(err))
		return
	}
	uris := make([]string, len(roots))
	for i, root := range roots {
		uris[i] = root.URI
	}
	var gone []string
	for _, u := range r.uris {
		if !slices.Contains(uris, u) {
			gone = append(gone, u)
		}
	}
	r.uris = uris
	// The SDK can only add and remove, each announced: the roots that went
	// go first, so that no moment grants a root that was withdrawn.
	if len(gone) > 0 {
		client.RemoveRoots(gone...)
	}
	client.AddRoots(roots...) // announced even when nothing was added
}

// rootsUpdateTime bounds asking for the roots of one update.
const rootsUpdateTime = 5 * time.Second

// Ask answers a request the server sent on a raw call's stream as the
// go-sdk's client session answers one (see newClient): through the
// answering middleware when the connection offers anything, else as the
// go-sdk does without handlers. ctx is the call's: it carries the
// caller's answerer.
func (p rawPeer) Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	s, offers := p.s, p.c.offers
	var res any
	var err error
	switch method {
	case "ping":
		return json.RawMessage("{}"), nil
	case "elicitation/create":
		if offers == 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "client does not support elicitation"}
		}
		var q mcp.ElicitParams
		if err := unmarshalParams(params, &q); err != nil {
			return nil, err
		}
		ctx = s.m.streams.carried(ctx, q.Meta)
		res, err = s.elicit(reporting(ctx, p.c.session, &q), &q)
	case "sampling/createMessage":
		if offers&ask.Sampling == 0 {
			return nil, &jsonrpc.Error{Code: codeUnsupportedMethod, Message: "client does not support CreateMessage"}
		}
		var q mcp.CreateMessageWithToolsParams
		if err := unmarshalParams(params, &q); err != nil {
			return nil, err
		}
		ctx = s.m.streams.carried(ctx, q.Meta)
		res, err = s.sample(reporting(ctx, p.c.session, &q), &q)
	case "roots/list":
		if offers == 0 {
			return json.RawMessage(`{"roots":[]}`), nil
		}
		var q mcp.ListRootsParams
		if err := unmarshalParams(params, &q); err != nil {
			return nil, err
		}
		res, err = s.listRoots(s.m.streams.carried(ctx, q.Meta))
	default:
		return nil, &jsonrpc.Error{Code: codeUnsupportedMethod, Message: fmt.Sprintf("method %q not found", method)}
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// codeUnsupportedMethod is the JSON-RPC code of a method the client does
// not serve.
const codeUnsupportedMethod = -32601

// unmarshalParams reads a request's params into v, or says why not as
// the go-sdk does.
func unmarshalParams(params json.RawMessage, v any) error {
	if len(params) == 0 || string(params) == "null" {
		return nil
	}
	if err := json.Unmarshal(params, v); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("invalid params: %v", err)}
	}
	return nil
}
