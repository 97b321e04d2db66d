package manager

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/rawhttp"
	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// Notices returns the hub on which the manager hands out what servers
// tell their client — resource updates, log messages, list changes and
// progress — to each consumer that listens, in order and never losing
// any silently (see package notify). Lifecycle stays on [Manager.Bus].
func (m *Manager) Notices() *notify.Hub { return m.notes }

// Bounds on what one server's log messages (and progress, as observers see
// it) may cost. A server sending tens of thousands a second slowed every
// other server's calls. Past the rate they are dropped before they become
// notices; the call's own progress is not limited, and neither are
// resource updates and list changes, which consumers subscribe to.
const (
	notifyRate  = 500 // a second, sustained
	notifyBurst = 1000
)

// dropReportEvery is how often, at most, a flood's dropped notifications
// are counted in a notifications_dropped event after the first: one event
// when dropping starts, then one every so often while it lasts, not one per
// notification let through.
const dropReportEvery = 5 * time.Second

// origin is the notify.Origin of a notice of s's session heard now.
func (s *supervisor) origin() notify.Origin {
	return notify.Origin{Server: s.name, Client: s.owner, Time: time.Now()}
}

// note hands a notice of s's session to the manager's listeners, log
// messages and progress within the rate. It runs on the SDK's goroutine
// for the session's notifications, one at a time, and may wait there for
// a lossless listener (the server's removal ends the wait). At debug level
// each notice is also logged.
func (s *supervisor) note(n notify.Notice) {
	s.heard()
	switch n.(type) {
	case notify.LogMessage, notify.Progress:
		if !s.notify.allow() {
			return
		}
	}
	if s.m.log.Enabled(s.ctx, slog.LevelDebug) {
		o := n.From()
		events.LogEvent(s.ctx, s.m.log, events.Event{Time: o.Time, Kind: n.Kind(), Server: o.Server, Fields: n.Fields()})
	}
	s.m.notes.Publish(s.ctx, n)
}

// logged hands on a log message of s's session.
func (s *supervisor) logged(p *mcp.LoggingMessageParams) {
	s.note(notify.LogMessage{Origin: s.origin(), Level: string(p.Level), Logger: p.Logger, Data: p.Data})
}

// progressed hands on a progress notification of s's session, to the
// listeners and to the call it reports on.
func (s *supervisor) progressed(p *mcp.ProgressNotificationParams) {
	pr := Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}
	s.note(notify.Progress{Origin: s.origin(), Progress: pr.Progress, Total: pr.Total, Message: pr.Message})
	s.progress.Deliver(p.ProgressToken, pr)
}

// listChanged hands on a list change of s's session; the list is read
// again.
func (s *supervisor) listChanged(list string, k listKind) {
	s.note(notify.ListChanged{Origin: s.origin(), List: list})
	s.markDirty(k)
}

// updated hands on a resource update of s's session.
func (s *supervisor) updated(p *mcp.ResourceUpdatedNotificationParams) {
	s.note(notify.ResourceUpdated{Origin: s.origin(), URI: p.URI, Meta: ownMeta(p.Meta)})
}

// rawPeer takes what an HTTP server sends on the stream of a raw call
// (see [Manager.CallRaw]) as the go-sdk's client session takes it on
// the call's own: c is the connection the call went on.
type rawPeer struct {
	s *supervisor
	c *conn
}

// Notify hands on a notification as the session's handlers do; one whose
// params do not read is dropped, as the go-sdk drops it.
func (p rawPeer) Notify(method string, params json.RawMessage) {
	s := p.s
	switch method {
	case "notifications/message":
		var m mcp.LoggingMessageParams
		if json.Unmarshal(params, &m) == nil {
			s.logged(&m)
		}
	case "notifications/progress":
		var m mcp.ProgressNotificationParams
		if json.Unmarshal(params, &m) == nil {
			s.progressed(&m)
		}
	case "notifications/tools/list_changed":
		s.listChanged(notify.Tools, listTools)
	case "notifications/resources/list_changed":
		s.listChanged(notify.Resources, listResources)
	case "notifications/prompts/list_changed":
		s.listChanged(notify.Prompts, listPrompts)
	case "notifications/resources/updated":
		var m mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(params, &m) == nil {
			s.updated(&m)
		}
	}
}

// notifyLimiter rate-limits the log messages of one server session and
// summarises what it drops: a notifications_dropped event at the first
// drop, then at most one every dropReportEvery with the count since. It
// is called from the SDK's notification goroutine; its report timer is
// its own, and stop waits for it.
type notifyLimiter struct {
	lim    *rate.Limiter
	report func(dropped int) // publishes notifications_dropped; called without mu

	mu sync.Mutex
	// mu guards the following.
	pending  int         // dropped since the last report
	reported time.Time   // when the last report went out
	flush    *dropReport // the report due, nil if none
	stopped  bool
}

// dropReport is a report due at a timer, and closed done once it ran.
type dropReport struct {
	t    *time.Timer
	done chan struct{}
}

func newNotifyLimiter(report func(dropped int)) *notifyLimiter {
	return &notifyLimiter{lim: rate.NewLimiter(notifyRate, notifyBurst), report: report}
}

// allow reports whether a notification may pass now, and counts it if not.
func (l *notifyLimiter) allow() bool {
	now := time.Now()
	if l.lim.AllowN(now, 1) {
		return true
	}
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return false
	}
	l.pending++
	if l.flush == nil && now.Sub(l.reported) >= dropReportEvery {
		// The first drop of a flood is said at once.
		n := l.pending
		l.pending, l.reported = 0, now
		l.mu.Unlock()
		l.report(n)
		return false
	}
	if l.flush == nil {
		l.armLocked(now)
	}
	l.mu.Unlock()
	return false
}

// armLocked sets the timer of the next report, dropReportEvery after the
// last one.
func (l *notifyLimiter) armLocked(now time.Time) {
	r := &dropReport{done: make(chan struct{})}
	l.flush = r
	r.t = time.AfterFunc(l.reported.Add(dropReportEvery).Sub(now), func() { l.fire(r) })
}

// fire reports what was dropped since the last report; the timer runs it.
func (l *notifyLimiter) fire(r *dropReport) {
	defer close(r.done)
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return
	}
	n := l.pending
	l.pending, l.reported = 0, time.Now()
	l.mu.Unlock()
	if n > 0 {
		l.report(n)
	}
	l.mu.Lock()
	if l.flush == r {
		l.flush = nil
		if l.pending > 0 && !l.stopped {
			l.armLocked(time.Now()) // dropped while this report went out
		}
	}
	l.mu.Unlock()
}

// stop reports what is still pending and waits for a report in progress,
// so that nothing is published after it returns.
func (l *notifyLimiter) stop() {
	l.mu.Lock()
	l.stopped = true
	r := l.flush
	n := l.pending
	l.pending = 0
	l.mu.Unlock()
	if r != nil && !r.t.Stop() {
		<-r.done
	}
	if n > 0 {
		l.report(n)
	}
}

// reportDropped publishes how many notifications s's limiter dropped.
func (s *supervisor) reportDropped(n int) {
	s.emit(NotificationsDropped{Dropped: n, Rate: notifyRate})
}

// noticeTally counts the log and progress notifications a session has
// handled, and those read from a streamable HTTP server's streams.
type noticeTally struct {
	taken atomic.Uint64
	// read counts the notifications on the event streams the go-sdk reads
	// of a streamable HTTP server, as they are read (noticeCounter).
	read atomic.Uint64
	mu   sync.Mutex
	// mu guards more, which is closed (and replaced) when taken grows.
	more chan struct{}
}

func (t *noticeTally) took() {
	t.mu.Lock()
	t.taken.Add(1)
	more := t.more
	t.more = make(chan struct{})
	t.mu.Unlock()
	close(more)
}

// saw counts the event data of an HTTP response stream if it is a log or
// progress notification.
func (t *noticeTally) saw(data []byte) {
	if rawrpc.IsNotice(data) {
		t.read.Add(1)
	}
}

// catchUp counts n as taken: messages the SDK dropped without handling
// are not waited for again.
func (t *noticeTally) catchUp(n uint64) {
	t.mu.Lock()
	if t.taken.Load() < n {
		t.taken.Store(n)
	}
	t.mu.Unlock()
}

// noticesBeforeWait bounds how long noticesBefore waits with no
// notification handled: one the SDK dropped (its params unreadable) never
// is.
const noticesBeforeWait = time.Second

// noticesBefore waits until the session has handled every log and
// progress notification read from the server so far: the SDK hands a
// response to its caller at once and notifications to another goroutine,
// so what a server logged or reported just before answering a call would
// otherwise be published after the call returned. A stdio server's
// notifications are counted as its process reads them, a streamable HTTP
// server's as the go-sdk reads its streams (noticeCounter); it waits until
// ctx ends or noticesBeforeWait passes with none handled.
func (c *conn) noticesBefore(ctx context.Context) {
	if c.notices == nil {
		return
	}
	if p := c.proc(); p != nil {
		c.notices.await(ctx, p.NoticesRead())
	} else if c.counted {
		c.notices.await(ctx, c.notices.read.Load())
	}
}

// await waits until read notifications are taken, ctx ends, or
// noticesBeforeWait passes with none taken (then the rest count as taken).
func (t *noticeTally) await(ctx context.Context, read uint64) {
	if t.taken.Load() >= read {
		return
	}
	timer := time.NewTimer(noticesBeforeWait)
	defer timer.Stop()
	for {
		t.mu.Lock()
		more := t.more
		t.mu.Unlock()
		if t.taken.Load() >= read {
			return
		}
		select {
		case <-more:
			// The session is handling them, slowly (a loaded machine):
			// the bound is on a stall, not on the whole wait.
			timer.Reset(noticesBeforeWait)
		case <-ctx.Done():
			return
		case <-timer.C:
			t.catchUp(read)
			return
		}
	}
}

// countNotices has the go-sdk's streamable HTTP transport t count, in
// c's tally, the log and progress notifications on every event stream it
// reads, as it reads them: before it can decode the answer that follows
// them. Only the go-sdk's reading counts, as only its handlers take
// them: c.plain is the client as dialed, for raw requests (package
// rawhttp), whose streams their callers read and hand on themselves.
func (c *conn) countNotices(t *mcp.StreamableClientTransport, maxEvent int) {
	plain := t.HTTPClient
	if plain == nil {
		plain = http.DefaultClient // as the go-sdk does
	}
	base := plain.Transport
	if n, ok := base.(noticeCounter); ok {
		// A transport Options.Dial gave before: counted once, for c.
		base, plain = n.base, n.plain
	}
	if base == nil {
		base = http.DefaultTransport
	}
	counting := *plain
	counting.Transport = noticeCounter{base: base, plain: plain, tally: c.notices, maxEvent: maxEvent}
	t.HTTPClient, c.plain, c.counted = &counting, plain, true
}

// noticeCounter is the RoundTripper of a streamable HTTP session's go-sdk
// client that counts notifications (see conn.countNotices).
type noticeCounter struct {
	base     http.RoundTripper
	plain    *http.Client // the client it was made from
	tally    *noticeTally
	maxEvent int
}

func (n noticeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := n.base.RoundTrip(r)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	media, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
	if !strings.EqualFold(strings.TrimSpace(media), "text/event-stream") {
		return resp, nil // one JSON answer: nothing comes before it
	}
	resp.Body = rawhttp.Watch(resp.Body, n.maxEvent, n.tally.saw)
	return resp, nil
}
