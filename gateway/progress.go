package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// progressSettle is how long finish waits for progress that is still on
// its way when the call returns: the SDK hands a response to its caller at
// once but the notifications that came just before it to another
// goroutine, so the last progress often arrives just after. finish waits
// until no progress has come for one settle period, at most
// maxSettleRounds of them, so a call with a progress token may end up to
// 50 ms later and keeps its last notification.
const (
	progressSettle  = 10 * time.Millisecond
	maxSettleRounds = 5
)

// maxQueuedProgress bounds the progress notifications waiting for a slow
// client; beyond it the newest are dropped (progress is advisory, and the
// next one supersedes them).
const maxQueuedProgress = 256

// progressForwarder relays a call's progress from the server to the client
// that made it, under the client's own progress token. The manager
// delivers progress on the connection's goroutine, which must not block on
// a slow client, so notifications are queued and sent by the forwarder's
// own goroutine, in order; finish sends what is queued before the call's
// result goes out, so the result never overtakes its progress.
type progressForwarder struct {
	ctx context.Context
	// settle: finish waits for progress still on its way (see
	// progressSettle); a raw call has had all of its own when it returns.
	settle bool
	// deliver sends one notification to the client, and reports false
	// when nothing more can reach it.
	deliver func(manager.Progress) bool
	wake    chan struct{}
	done    chan struct{}

	mu sync.Mutex
	// mu guards queue, received and closed.
	queue    []manager.Progress
	received int
	closed   bool
}

func newProgressForwarder(ctx context.Context, settle bool, deliver func(manager.Progress) bool) *progressForwarder {
	f := &progressForwarder{ctx: ctx, settle: settle, deliver: deliver, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go f.run()
	return f
}

// sessionProgress delivers progress on ss under the client's token. If
// to is not nil, it tells where each notification goes instead of ss (see
// upstreamCall.to): one that has nowhere to go, or whose request ended,
// is dropped, and the next may find one.
func sessionProgress(ctx context.Context, ss *mcp.ServerSession, to func() (context.Context, *mcp.ServerSession), token any) func(manager.Progress) bool {
	return func(p manager.Progress) bool {
		ctx, ss := ctx, ss
		if to != nil {
			if ctx, ss = to(); ss == nil {
				return true
			}
		}
		err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message})
		return err == nil || to != nil
	}
}

// rawProgress delivers progress as JSON-RPC messages sent to to, under
// the client's token as it wrote it (raw JSON).
func rawProgress(token json.RawMessage, to messageSender) func(manager.Progress) bool {
	return func(p manager.Progress) bool {
		params, err := json.Marshal(&mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message})
		if err != nil {
			return true // a progress that does not encode (NaN) is dropped
		}
		msg := make([]byte, 0, len(params)+64)
		msg = append(msg, `{"jsonrpc":"2.0","method":"notifications/progress","params":`...)
		msg = append(msg, params...)
		return to.send(append(msg, '}')) == nil
	}
}

// send queues p; it never blocks.
func (f *progressForwarder) send(p manager.Progress) {
	f.mu.Lock()
	f.received++
	if !f.closed && len(f.queue) < maxQueuedProgress {
		f.queue = append(f.queue, p)
	}
	f.mu.Unlock()
	f.poke()
}

func (f *progressForwarder) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// finish lets late progress settle (if the forwarder does), sends what
// is queued and stops the forwarder; what comes later is dropped.
func (f *progressForwarder) finish() {
	for i := 0; f.settle && i < maxSettleRounds; i++ {
		f.mu.Lock()
		before := f.received
		f.mu.Unlock()
		t := time.NewTimer(progressSettle)
		select {
		case <-t.C:
		case <-f.ctx.Done():
			t.Stop()
		}
		f.mu.Lock()
		quiet := f.received == before
		f.mu.Unlock()
		if quiet || f.ctx.Err() != nil {
			break
		}
	}
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.poke()
	<-f.done
}

func (f *progressForwarder) run() {
	defer close(f.done)
	for {
		select {
		case <-f.wake:
		case <-f.ctx.Done():
			return
		}
		f.mu.Lock()
		batch, closed := f.queue, f.closed
		f.queue = nil
		f.mu.Unlock()
		for _, p := range batch {
			if !f.deliver(p) {
				return // the client is gone
			}
		}
		if closed {
			return
		}
	}
}

// What a server asks a client may ask for progress (its request carries a
// progress token). The client reports under a token of the gateway's,
// unique to its session (servers choose theirs, and two could choose the
// same), and the gateway relays each report to the server that asked.

// relayProgress gives a request to the client, whose _meta is *meta (a
// copy the caller may change), a token of the session's when the server
// asked for progress (ctx has its reporter), and routes the client's
// reports to it until the returned function is called.
func (s *session) relayProgress(ctx context.Context, meta *mcp.Meta) (done func()) {
	report := ask.ReporterOf(ctx)
	if report == nil {
		return func() {}
	}
	s.mu.Lock()
	s.reportsSeen++
	token := fmt.Sprintf("mcpvisor-ask-%d", s.reportsSeen)
	if s.reporters == nil {
		s.reporters = map[string]ask.Reporter{}
	}
	s.reporters[token] = report
	s.mu.Unlock()
	m := maps.Clone(*meta)
	if m == nil {
		m = mcp.Meta{}
	}
	m["progressToken"] = token
	*meta = m
	return func() {
		s.mu.Lock()
		delete(s.reporters, token)
		s.mu.Unlock()
	}
}

// clientProgress relays a client's progress report on a request the
// gateway sent it to the server that asked; reports under other tokens are
// not the gateway's business and are dropped.
func (ep *endpoint) clientProgress(ctx context.Context, req *mcp.ProgressNotificationServerRequest) {
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	s := ep.g.clients.session(ep, req.Session)
	s.mu.Lock()
	report := s.reporters[token]
	s.mu.Unlock()
	if report != nil {
		report(ctx, req.Params.Progress, req.Params.Total, req.Params.Message)
	}
}
