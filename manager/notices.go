package manager

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/mcpvisor/mcpvisor/events"
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
