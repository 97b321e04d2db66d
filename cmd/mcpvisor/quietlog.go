package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
)

// At an interactive terminal the HUD shows how every server is doing, so
// the log lines that say the same, and the lifecycle's INFO lines, only
// crowd the prompt: they go to the log file, and the terminal gets the
// warnings and errors nothing else shows, each failure once.

// hudKinds are the events the HUD shows as a server's state, last error,
// retry countdown or metrics.
var hudKinds = map[string]bool{}

func init() {
	for _, k := range []events.Kind{events.KindConnecting, events.KindConnected, events.KindDisconnected,
		events.KindHealthFailed, events.KindBackoff, events.KindFailed, events.KindCircuit, events.KindIdle,
		events.KindClosing, events.KindDisabled, events.KindToolsChanged, events.KindToolCall} {
		hudKinds[string(k)] = true
	}
}

// repeatSummaryEvery is how often a failure that keeps repeating the same
// way is summarized while it lasts.
const repeatSummaryEvery = time.Minute

// quietHandler is the terminal's handler at the REPL. It passes warnings
// and errors on to next, except a failed tool call (whoever called has its
// error), what the HUD shows while it is on, and a failure that repeats
// the last one of its server and message: that is counted, and said as
// "failed N more times the same way" when it changes, the server
// connects or goes, a minute has passed, or at exit (flush).
type quietHandler struct {
	next  slog.Handler
	hud   *atomic.Pointer[hudDisplay] // set once the HUD exists
	state *repeats
	attrs []slog.Attr // from WithAttrs
}

// repeats is the failures seen per server and message.
type repeats struct {
	mu sync.Mutex
	// mu guards last.
	last map[repeatKey]*repeat
}

type repeatKey struct{ server, msg string }

type repeat struct {
	level  slog.Level
	kind   string
	what   string // the failure (its error), what a repeat must match
	count  int    // repeats not yet said
	said   time.Time
	record slog.Record // the first, for the summary's attributes
}

func newQuietHandler(next slog.Handler, hud *atomic.Pointer[hudDisplay]) *quietHandler {
	return &quietHandler{next: next, hud: hud, state: &repeats{last: map[repeatKey]*repeat{}}}
}

// Enabled takes INFO too: a server's connected or removed line ends its
// run of repeats.
func (q *quietHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (q *quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *q
	c.attrs = append(slices.Clip(q.attrs), as...)
	c.next = q.next.WithAttrs(as)
	return &c
}

func (q *quietHandler) WithGroup(name string) slog.Handler {
	c := *q
	c.next = q.next.WithGroup(name)
	return &c
}

func (q *quietHandler) Handle(ctx context.Context, r slog.Record) error {
	server, kind, what := q.fields(r)
	if r.Level < slog.LevelWarn {
		if kind == string(events.KindConnected) || kind == string(events.KindRemoved) {
			q.say(ctx, q.state.end(server))
		}
		return nil
	}
	if kind == string(events.KindToolCall) || (hudKinds[kind] && q.hudShowing()) {
		return nil
	}
	before, show := q.state.see(server, kind, what, r, time.Now())
	q.say(ctx, before)
	if !show {
		return nil
	}
	return q.next.Handle(ctx, r)
}

// flush says every repeat not said yet (at exit).
func (q *quietHandler) flush() {
	q.say(context.Background(), q.state.end(""))
}

func (q *quietHandler) hudShowing() bool {
	return q.hud.Load().showing()
}

// say writes the summaries of repeats.
func (q *quietHandler) say(ctx context.Context, summaries []slog.Record) {
	for _, r := range summaries {
		_ = q.next.Handle(ctx, r)
	}
}

// fields picks the server, event kind and failure out of a record.
func (q *quietHandler) fields(r slog.Record) (server, kind, what string) {
	pick := func(a slog.Attr) bool {
		switch a.Key {
		case "server":
			server = a.Value.String()
		case "kind":
			kind = a.Value.String()
		case "error":
			what = a.Value.String()
		}
		return true
	}
	for _, a := range q.attrs {
		pick(a)
	}
	r.Attrs(pick)
	return server, kind, what
}

// see records a failure. It returns the summary of the repeats of an
// earlier, different failure of the same server and message, or of this
// one once a minute, and whether to show this record (it is not a repeat).
func (s *repeats) see(server, kind, what string, r slog.Record, now time.Time) (summaries []slog.Record, show bool) {
	k := repeatKey{server, r.Message}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.last[k]
	if last != nil && last.what == what {
		last.count++
		if now.Sub(last.said) >= repeatSummaryEvery {
			summaries = append(summaries, last.summary(server, now))
		}
		return summaries, false
	}
	if last != nil && last.count > 0 {
		summaries = append(summaries, last.summary(server, now))
	}
	s.last[k] = &repeat{level: r.Level, kind: kind, what: what, said: now, record: r.Clone()}
	return summaries, true
}

// end forgets the failures of server ("" for all), returning the summaries
// of their unsaid repeats.
func (s *repeats) end(server string) []slog.Record {
	now := time.Now()
	var out []slog.Record
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, last := range s.last {
		if server != "" && k.server != server {
			continue
		}
		if last.count > 0 {
			out = append(out, last.summary(k.server, now))
		}
		delete(s.last, k)
	}
	return out
}

// summary says how often the failure repeated since last said, and resets
// the count. Called with the lock held; it only builds the record.
func (r *repeat) summary(server string, now time.Time) slog.Record {
	rec := slog.NewRecord(now, r.level, fmt.Sprintf("failed %d more %s the same way", r.count, times(r.count)), 0)
	if server != "" {
		rec.AddAttrs(slog.String("server", server))
	}
	if r.kind != "" {
		rec.AddAttrs(slog.String("kind", r.kind))
	}
	rec.AddAttrs(slog.String("as", r.record.Message))
	if r.what != "" {
		rec.AddAttrs(slog.String("error", r.what))
	}
	r.count, r.said = 0, now
	return rec
}

func times(n int) string {
	if n == 1 {
		return "time"
	}
	return "times"
}
