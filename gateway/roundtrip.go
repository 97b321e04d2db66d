package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// multiRoundTripVersion is the first protocol on which a server cannot
// send its client requests: what it needs from the client during a call
// goes back as the input requests of an input_required result, and the
// client calls again with its answers.
const multiRoundTripVersion = "2026-07-28"

// maxRoundTrips bounds the calls one session may have waiting for its
// answers; beyond it the oldest is given up.
const maxRoundTrips = 64

// roundTrip is a call of a client on the 2026-07-28 protocol, whose server
// may ask things of the client meanwhile. The upstream call runs on its
// own, detached from the client's request, across as many requests of the
// client as it takes: each returns either the call's result or what the
// server has asked since the last one, with the request state naming this
// round trip; the client answers by calling the tool again with that
// state and its answers. A call the client never comes back to ends when
// the server stops waiting for its answer, or with the session.
type roundTrip struct {
	state string // the request state: random, and known to one session only
	tool  string // the tool as the client named it
	seq   int    // the session's count of round trips when this one began
	// ctx is the upstream call's: it has the values of the client's first
	// request and ends with the session, or when the client gives up.
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}       // closed once res is set
	res    *mcp.CallToolResult // the call's result
	wake   chan struct{}       // a question was queued

	mu sync.Mutex
	// mu guards the following.
	queued []*question          // asked, not yet given to the client
	sent   map[string]*question // given to the client, not yet answered
	asked  int                  // numbers the questions
	expiry *time.Timer          // gives up the trip of a holder its client left (idleFor)
	// waiter is the request of the client that waits on the trip, if
	// any: what the call sends on its way goes on its stream.
	waiter *tripWaiter
}

// tripWaiter is a request of the client waiting on its round trip: its
// context (the go-sdk finds the request's stream, and the log level its
// _meta asked for, by its values) and its session.
type tripWaiter struct {
	ctx context.Context
	ss  *mcp.ServerSession
}

// waitOn makes the request with ctx and session ss the one that carries
// what the call sends on its way (progress, log messages), until the
// function it returns is called. Without a session each request of the
// client is a stream of its own, and the first has ended by the time the
// client brings its answers: a request that brings answers is made the
// waiter before the call has them.
func (rt *roundTrip) waitOn(ctx context.Context, ss *mcp.ServerSession) (leave func()) {
	w := &tripWaiter{ctx: ctx, ss: ss}
	rt.mu.Lock()
	rt.waiter = w
	rt.mu.Unlock()
	return func() {
		rt.mu.Lock()
		if rt.waiter == w {
			rt.waiter = nil
		}
		rt.mu.Unlock()
	}
}

// waiting is the request of the client waiting on the trip now: its
// context and session, or nil ones while the client has none (it is
// answering questions); what the call sends meanwhile has no stream to go
// on.
func (rt *roundTrip) waiting() (context.Context, *mcp.ServerSession) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.waiter == nil {
		return nil, nil
	}
	return rt.waiter.ctx, rt.waiter.ss
}

// idleFor arranges for expire to run unless the client comes back for the
// round trip (busy) within d.
func (rt *roundTrip) idleFor(d time.Duration, expire func()) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.expiry == nil {
		rt.expiry = time.AfterFunc(d, expire)
		return
	}
	rt.expiry.Reset(d)
}

// busy stops the expiry while a request of the client waits on the trip.
func (rt *roundTrip) busy() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.expiry != nil {
		rt.expiry.Stop()
	}
}

// question is one thing the server asked, waiting for the client's answer.
type question struct {
	id     string
	req    mcp.InputRequest
	answer chan answer // gets exactly one
}

type answer struct {
	res mcp.InputResponse
	err error
}

// newRoundTrip starts a round trip of session s for a call whose first
// request has context call.
func newRoundTrip(call context.Context, s *session, tool string, seq int) *roundTrip {
	rt := &roundTrip{state: rand.Text(), tool: tool, seq: seq, done: make(chan struct{}),
		wake: make(chan struct{}, 1), sent: map[string]*question{}}
	ctx, stop := linked(call, s.ctx)
	rt.ctx, rt.cancel = context.WithCancelCause(ctx)
	context.AfterFunc(rt.ctx, stop)
	return rt
}

// finish records the call's result.
func (rt *roundTrip) finish(res *mcp.CallToolResult) {
	rt.res = res
	rt.cancel(errFinished) // before the result goes out: from now on the client cannot be asked
	close(rt.done)
}

// ask puts req to the client and waits for its answer, until ctx (the
// server's request) or the call ends. The client cannot be told that a
// question it was given is withdrawn: its answer is then dropped.
func (rt *roundTrip) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	if rt.ctx.Err() != nil {
		// Between calls, or once the client left: a client on this
		// protocol can be asked only during a call.
		return nil, fmt.Errorf("%w (a client on %s can be asked only during its call): %w", ended(rt.ctx), multiRoundTripVersion, ask.ErrNoAnswer)
	}
	q := &question{req: req, answer: make(chan answer, 1)}
	rt.mu.Lock()
	rt.asked++
	q.id = strconv.Itoa(rt.asked)
	rt.queued = append(rt.queued, q)
	rt.mu.Unlock()
	select {
	case rt.wake <- struct{}{}:
	default: // already woken: the next take finds this one too
	}
	select {
	case a := <-q.answer:
		return a.res, a.err
	case <-ctx.Done():
		rt.withdraw(q)
		return nil, ended(ctx)
	case <-rt.ctx.Done():
		rt.withdraw(q)
		return nil, ended(rt.ctx)
	}
}

// ended is why ctx ended: its error, with its cause when that says more.
func ended(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || errors.Is(cause, err) {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}

func (rt *roundTrip) withdraw(q *question) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.queued = slices.DeleteFunc(rt.queued, func(x *question) bool { return x == q })
	delete(rt.sent, q.id)
}

// take moves the queued questions to those given to the client and
// returns them as input requests, or nil if there are none.
func (rt *roundTrip) take() mcp.InputRequestMap {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.queued) == 0 {
		return nil
	}
	reqs := make(mcp.InputRequestMap, len(rt.queued))
	for _, q := range rt.queued {
		reqs[q.id] = q.req
		rt.sent[q.id] = q
	}
	rt.queued = nil
	return reqs
}

// answer hands the client's answers to the questions it was given; one it
// left unanswered gets an error.
func (rt *roundTrip) answer(responses mcp.InputResponseMap) {
	rt.mu.Lock()
	sent := rt.sent
	rt.sent = map[string]*question{}
	rt.mu.Unlock()
	for id, q := range sent {
		if r, ok := responses[id]; ok && r != nil {
			q.answer <- answer{res: r}
		} else {
			q.answer <- answer{err: fmt.Errorf("the client called again without answering input request %q", id)}
		}
	}
}

// Why a round trip ended other than by the call's own result.
var (
	errAbandoned = errors.New("the client cancelled the call")
	errGivenUp   = fmt.Errorf("the client left more than %d calls waiting for its answers; the oldest was given up", maxRoundTrips)
	errFinished  = errors.New("the call has finished")
	errExpired   = errors.New("the client did not come back for the call's input requests within the session timeout")
)

// await waits, for one request of the client, for the call's result or
// for questions to give it; ctx is that request's.
func (rt *roundTrip) await(ctx context.Context) (res *mcp.CallToolResult, finished bool) {
	for {
		select {
		case <-rt.done:
			return rt.res, true
		default:
		}
		select {
		case <-rt.done:
			return rt.res, true
		case <-rt.wake:
			if reqs := rt.take(); reqs != nil {
				return inputRequired(reqs, rt.state), false
			}
		case <-ctx.Done():
			rt.cancel(errAbandoned)
			return errorResult(errAbandoned.Error()), true
		}
	}
}

// inputRequired is a result that gives the client input requests. The SDK
// marks a tool handler's result with input requests as input_required by
// itself, but not one the unlisted-tool path returns (it answers before
// the SDK's own dispatch), and the mark can be set only by decoding it.
func inputRequired(reqs mcp.InputRequestMap, state string) *mcp.CallToolResult {
	var res mcp.CallToolResult
	_ = json.Unmarshal([]byte(`{"resultType":"input_required"}`), &res)
	res.InputRequests, res.RequestState = reqs, state
	return &res
}

// trip returns the session's round trip with request state state, or nil.
func (s *session) trip(state string) *roundTrip {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trips[state]
}

// addTrip starts a round trip for a call, giving up the oldest if the
// session has too many; nil once the session ended.
func (s *session) addTrip(call context.Context, tool string) *roundTrip {
	var oldest *roundTrip
	defer func() {
		if oldest != nil {
			oldest.cancel(errGivenUp) // its AfterFuncs run here, not under the lock
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil
	}
	if len(s.trips) >= maxRoundTrips {
		for _, rt := range s.trips {
			if oldest == nil || rt.seq < oldest.seq {
				oldest = rt
			}
		}
		delete(s.trips, oldest.state)
	}
	s.tripsSeen++
	rt := newRoundTrip(call, s, tool, s.tripsSeen)
	s.trips[rt.state] = rt
	return rt
}

// dropTrip forgets a round trip whose result went to the client.
func (s *session) dropTrip(rt *roundTrip) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.trips, rt.state)
}
