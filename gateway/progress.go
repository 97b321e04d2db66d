package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager"
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
	ctx   context.Context
	ss    *mcp.ServerSession
	token any
	wake  chan struct{}
	done  chan struct{}

	mu sync.Mutex
	// mu guards queue, received and closed.
	queue    []manager.Progress
	received int
	closed   bool
}

func newProgressForwarder(ctx context.Context, ss *mcp.ServerSession, token any) *progressForwarder {
	f := &progressForwarder{ctx: ctx, ss: ss, token: token, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go f.run()
	return f
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

// finish lets late progress settle, sends what is queued and stops the
// forwarder.
func (f *progressForwarder) finish() {
	for range maxSettleRounds {
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
			if f.ss.NotifyProgress(f.ctx, &mcp.ProgressNotificationParams{
				ProgressToken: f.token, Progress: p.Progress, Total: p.Total, Message: p.Message}) != nil {
				return // the client is gone
			}
		}
		if closed {
			return
		}
	}
}
