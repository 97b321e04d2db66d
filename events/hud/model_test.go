package hud_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/events/hud"
)

// t0 is the time of the first event of every sequence.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// script builds an event sequence as a bus would stamp it: Seq from 1 up,
// Time from t0 plus the offset given.
type script struct {
	seq uint64
	evs []events.Event
}

func (s *script) at(offset time.Duration, kind events.Kind, server string, fields events.Fields) *script {
	s.seq++
	s.evs = append(s.evs, events.Event{Seq: s.seq, Time: t0.Add(offset), Kind: kind, Server: server, Fields: fields})
	return s
}

func (s *script) model() *hud.Model {
	var m hud.Model
	m.ApplyAll(s.evs)
	return &m
}

// row returns the one row named name, failing if it is not there.
func row(t *testing.T, m *hud.Model, now time.Time, name string) hud.Row {
	t.Helper()
	for _, r := range m.View(now) {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", name, m.View(now))
	return hud.Row{}
}

// line renders the model at now, wide enough for anything, and returns the
// line of server name.
func line(t *testing.T, m *hud.Model, now time.Time, name string) string {
	t.Helper()
	rows := m.View(now)
	lines := hud.Lines(rows, hud.Layout{Width: 400})
	for i, r := range rows {
		if r.Name == name {
			return lines[i+1]
		}
	}
	t.Fatalf("no row %q", name)
	return ""
}

func TestHUDModelConnect(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "demo", events.Fields{"transport": "stdio", "endpoint": "demo-server"})
	m := s.model()
	r := row(t, m, t0, "demo")
	assert.Equal(t, hud.StateConnecting, r.State, "a new server is connecting")
	assert.Equal(t, "◌", r.Glyph)

	s.at(10*time.Millisecond, events.KindConnecting, "demo", events.Fields{"attempt": 1, "probe": false})
	s.at(50*time.Millisecond, events.KindConnected, "demo", events.Fields{"attempt": 1, "tools": 4, "pid": 42, "protocol": "2025-06-18"})
	m = s.model()
	r = row(t, m, t0.Add(time.Second), "demo")
	assert.Equal(t, hud.Row{
		Name: "demo", State: hud.StateConnected, Glyph: "●", Transport: "stdio", Tools: 4, Circuit: hud.CircuitClosed,
	}, r)
	assert.Equal(t, "● demo  stdio  4 tools", line(t, m, t0, "demo"))
	assert.Equal(t, "mcpvisor: 1 server · 1 connected", hud.Lines(m.View(t0), hud.Layout{Width: 80})[0])
}

// A server held back by the connection cap says so until its attempt
// starts.
func TestHUDModelWaitingForSlot(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "c", events.Fields{"transport": "stdio"})
	s.at(0, events.KindConnecting, "c", events.Fields{"attempt": 1, "waiting": "max connections (2) reached"})
	m := s.model()
	r := row(t, m, t0, "c")
	assert.Equal(t, "max connections (2) reached", r.Waiting)
	assert.Equal(t, "◌ c  stdio  0 tools  waiting: max connections (2) reached", line(t, m, t0, "c"))

	s.at(time.Second, events.KindConnecting, "c", events.Fields{"attempt": 1})
	m = s.model()
	assert.Empty(t, row(t, m, t0.Add(time.Second), "c").Waiting, "the attempt has started")
	assert.Equal(t, "◌ c  stdio  0 tools  connecting", line(t, m, t0.Add(time.Second), "c"))
}

func TestHUDModelBackoffCountdown(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "broken", events.Fields{"transport": "stdio"})
	s.at(0, events.KindConnecting, "broken", events.Fields{"attempt": 1})
	s.at(time.Second, events.KindBackoff, "broken", events.Fields{"attempt": 2, "delay_ms": int64(2400),
		"error": "server \"broken\": spawn: fork/exec /nonexistent/prog:\nno such file or directory"})
	m := s.model()

	tests := []struct {
		now     time.Duration // after t0
		retryIn time.Duration
		status  string
	}{
		{now: time.Second, retryIn: 2400 * time.Millisecond, status: "retry in 2.4s (attempt 3)"},
		{now: 2 * time.Second, retryIn: 1400 * time.Millisecond, status: "retry in 1.4s (attempt 3)"},
		{now: 3300 * time.Millisecond, retryIn: 100 * time.Millisecond, status: "retry in 0.1s (attempt 3)"},
		{now: 5 * time.Second, retryIn: 0, status: "retrying (attempt 3)"},
	}
	for _, tt := range tests {
		now := t0.Add(tt.now)
		r := row(t, m, now, "broken")
		assert.Equal(t, hud.StateBackoff, r.State)
		assert.Equal(t, "↻", r.Glyph)
		assert.Equal(t, 3, r.Attempt, "the attempt the retry will make")
		assert.Equal(t, tt.retryIn, r.RetryIn, "at t0+%v", tt.now)
		assert.Equal(t, `server "broken": spawn: fork/exec /nonexistent/prog: no such file or directory`, r.Error, "one line")
		assert.Equal(t, "↻ broken  stdio  0 tools  "+tt.status+` · server "broken": spawn: fork/exec /nonexistent/prog: no such file or directory`,
			line(t, m, now, "broken"))
	}
	assert.Equal(t, "mcpvisor: 1 server · 1 retrying", hud.Lines(m.View(t0), hud.Layout{Width: 80})[0])

	// The next attempt ends the countdown.
	s.at(3400*time.Millisecond, events.KindConnecting, "broken", events.Fields{"attempt": 3})
	m = s.model()
	r := row(t, m, t0.Add(4*time.Second), "broken")
	assert.Equal(t, hud.StateConnecting, r.State)
	assert.Zero(t, r.RetryIn)
	assert.Contains(t, line(t, m, t0.Add(4*time.Second), "broken"), "connecting (attempt 3) · server \"broken\": spawn:",
		"the last error stays until a connect succeeds")
}

func TestHUDModelFailed(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "gone", events.Fields{"transport": "http"})
	s.at(0, events.KindBackoff, "gone", events.Fields{"attempt": 3, "delay_ms": 400, "error": "refused"})
	s.at(time.Second, events.KindFailed, "gone", events.Fields{"attempts": 4, "error": "gave up after 4 attempts: refused"})
	m := s.model()
	r := row(t, m, t0.Add(time.Hour), "gone")
	assert.Equal(t, hud.StateFailed, r.State)
	assert.Equal(t, "✗", r.Glyph)
	assert.Equal(t, 4, r.Attempt)
	assert.Zero(t, r.RetryIn, "no retry after failed")
	assert.Equal(t, "✗ gone  http  0 tools  gave up after 4 attempts: refused", line(t, m, t0, "gone"))
}

func TestHUDModelBreakerOpenThenRecover(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "remote", events.Fields{"transport": "http"})
	s.at(0, events.KindBackoff, "remote", events.Fields{"attempt": 5, "delay_ms": 3000, "error": "connection refused"})
	s.at(time.Second, events.KindCircuit, "remote", events.Fields{"from": "closed", "to": "open", "failures": 5,
		"probe_in_ms": int64(12000), "error": "connection refused"})
	m := s.model()

	r := row(t, m, t0.Add(time.Second), "remote")
	assert.Equal(t, hud.StateOpen, r.State)
	assert.Equal(t, "⊘", r.Glyph)
	assert.Equal(t, hud.CircuitOpen, r.Circuit)
	assert.Equal(t, 12*time.Second, r.ProbeIn)
	assert.Zero(t, r.RetryIn, "the backoff countdown is over once the circuit opens")
	assert.Equal(t, "⊘ remote  http  0 tools  circuit open · probe in 12s · connection refused", line(t, m, t0.Add(time.Second), "remote"))
	assert.Equal(t, 7500*time.Millisecond, row(t, m, t0.Add(5500*time.Millisecond), "remote").ProbeIn)
	assert.Contains(t, line(t, m, t0.Add(5500*time.Millisecond), "remote"), "probe in 7.5s")
	assert.Contains(t, line(t, m, t0.Add(time.Minute), "remote"), "circuit open · probe due")
	assert.Equal(t, "mcpvisor: 1 server · 1 circuit open", hud.Lines(m.View(t0), hud.Layout{Width: 80})[0])

	// The probe: half-open, then a connecting attempt marked probe.
	s.at(13*time.Second, events.KindCircuit, "remote", events.Fields{"from": "open", "to": "half_open"})
	s.at(13*time.Second, events.KindConnecting, "remote", events.Fields{"attempt": 6, "probe": true})
	m = s.model()
	r = row(t, m, t0.Add(13*time.Second), "remote")
	assert.Equal(t, hud.StateConnecting, r.State)
	assert.True(t, r.Probe)
	assert.Equal(t, hud.CircuitHalfOpen, r.Circuit)
	assert.Equal(t, "◌ remote  http  0 tools  probing (attempt 6) · connection refused", line(t, m, t0.Add(13*time.Second), "remote"))

	// Recovery clears the error and closes the circuit.
	s.at(14*time.Second, events.KindConnected, "remote", events.Fields{"attempt": 6, "tools": 2})
	s.at(14*time.Second, events.KindCircuit, "remote", events.Fields{"from": "half_open", "to": "closed"})
	m = s.model()
	r = row(t, m, t0.Add(15*time.Second), "remote")
	assert.Equal(t, hud.Row{Name: "remote", State: hud.StateConnected, Glyph: "●", Transport: "http", Tools: 2, Circuit: hud.CircuitClosed}, r)
	assert.Equal(t, "● remote  http  2 tools", line(t, m, t0.Add(15*time.Second), "remote"))
}

func TestHUDModelToolsAndLatency(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "demo", events.Fields{"transport": "stdio"})
	s.at(0, events.KindConnected, "demo", events.Fields{"attempt": 1, "tools": 4})
	s.at(0, events.KindToolsChanged, "demo", events.Fields{"added": []string{"a", "b"}, "removed": []string{"echo"}})
	s.at(0, events.KindToolCall, "demo", events.Fields{"tool": "echo", "duration_ms": int64(100), "is_error": false})
	s.at(0, events.KindToolCall, "demo", events.Fields{"tool": "echo", "duration_ms": 200.0, "is_error": false})
	s.at(0, events.KindToolCall, "demo", events.Fields{"tool": "fail", "duration_ms": int64(100), "is_error": true})
	s.at(0, events.KindToolCall, "demo", events.Fields{"tool": "sleep", "duration_ms": int64(100), "is_error": false,
		"code": "CONNECTION_TIMEOUT", "error": "timed out"})
	// Ctrl-C after 30s: the caller gave up; neither a failure nor latency.
	s.at(0, events.KindToolCall, "demo", events.Fields{"tool": "sleep", "duration_ms": 30000.0, "is_error": false,
		"code": "INVOCATION_FAILED", "error": "cancelled: context canceled", "cancelled": true})
	m := s.model()
	r := row(t, m, t0, "demo")
	assert.Equal(t, 5, r.Tools, "4 + 2 added - 1 removed")
	assert.Equal(t, 4, r.Calls)
	assert.Equal(t, 2, r.FailedCalls, "an error result and an error code")
	// 100, then +0.2·(200−100) = 120, then +0.2·(100−120) = 116, then 112.8.
	assert.InDelta(t, 112.8, float64(r.Latency)/float64(time.Millisecond), 0.001)
	assert.Equal(t, "● demo  stdio  5 tools  112ms  2 failed calls", line(t, m, t0, "demo"))
	assert.Empty(t, r.Error, "a failed call is not the server's error")

	// The count never goes below zero, whatever was missed.
	s.at(0, events.KindToolsChanged, "demo", events.Fields{"removed": []any{"a", "b", "c", "d", "e", "f"}})
	assert.Equal(t, 0, row(t, s.model(), t0, "demo").Tools)
}

func TestHUDModelOtherStates(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "off", events.Fields{"transport": "stdio"})
	s.at(0, events.KindDisabled, "off", nil)
	s.at(0, events.KindAdded, "sleepy", events.Fields{"transport": "sse"})
	s.at(0, events.KindConnected, "sleepy", events.Fields{"attempt": 1, "tools": 1})
	s.at(0, events.KindIdle, "sleepy", events.Fields{"idle_ms": 60000})
	s.at(0, events.KindAdded, "leaving", events.Fields{"transport": "http"})
	s.at(0, events.KindClosing, "leaving", events.Fields{"reason": "removed"})
	s.at(0, events.KindAdded, "sick", events.Fields{"transport": "http"})
	s.at(0, events.KindConnected, "sick", events.Fields{"attempt": 1, "tools": 3})
	s.at(0, events.KindHealthFailed, "sick", events.Fields{"error": "ping timed out"})
	m := s.model()
	want := map[string]struct {
		state hud.State
		glyph string
		line  string
	}{
		"off":     {hud.StateDisabled, "–", "– off      stdio  0 tools  disabled"},
		"sleepy":  {hud.StateIdle, "◦", "◦ sleepy   sse    1 tool   idle"},
		"leaving": {hud.StateClosing, "↓", "↓ leaving  http   0 tools  closing"},
		"sick":    {hud.StateConnected, "●", "● sick     http   3 tools  ping timed out"},
	}
	for name, w := range want {
		r := row(t, m, t0, name)
		assert.Equal(t, w.state, r.State, name)
		assert.Equal(t, w.glyph, r.Glyph, name)
		assert.Equal(t, w.line, line(t, m, t0, name), name)
	}
	assert.Equal(t, "mcpvisor: 4 servers · 1 connected · 1 idle · 1 disabled · 1 closing", hud.Lines(m.View(t0), hud.Layout{Width: 200})[0])
}

func TestHUDModelRemoved(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "a", events.Fields{"transport": "stdio"})
	s.at(0, events.KindAdded, "b", events.Fields{"transport": "stdio"})
	s.at(0, events.KindConnected, "a", events.Fields{"tools": 1})
	s.at(0, events.KindRemoved, "a", nil)
	// A call that finished after the removal must not bring the row back.
	s.at(0, events.KindToolCall, "a", events.Fields{"tool": "echo", "duration_ms": 5})
	s.at(0, events.KindToolsChanged, "a", events.Fields{"added": []string{"x"}})
	m := s.model()
	rows := m.View(t0)
	require.Len(t, rows, 1)
	assert.Equal(t, "b", rows[0].Name)

	// Added again, it starts afresh.
	s.at(0, events.KindAdded, "a", events.Fields{"transport": "http"})
	r := row(t, s.model(), t0, "a")
	assert.Equal(t, hud.Row{Name: "a", State: hud.StateConnecting, Glyph: "◌", Transport: "http", Circuit: hud.CircuitClosed}, r)
}

// A server the model first hears of through a lifecycle event (its added
// left a bounded history) still gets a row.
func TestHUDModelServerWithoutAdded(t *testing.T) {
	var s script
	s.at(0, events.KindNotification, "x", events.Fields{"method": "notifications/message"})
	s.at(0, events.KindBackoff, "x", events.Fields{"attempt": 1, "delay_ms": 1000, "error": "boom"})
	m := s.model()
	r := row(t, m, t0, "x")
	assert.Equal(t, hud.StateBackoff, r.State)
	assert.Equal(t, time.Second, r.RetryIn)
	assert.Empty(t, r.Transport)
	assert.Equal(t, "↻ x  0 tools  retry in 1.0s (attempt 2) · boom", line(t, m, t0, "x"))
}

// The model starts from a bus's history plus a subscription made before
// it: the overlap is applied once.
func TestHUDModelFromHistoryAndSubscription(t *testing.T) {
	bus := events.NewBus(events.Options{Now: func() time.Time { return t0 }})
	defer bus.Close()
	bus.Publish(events.KindAdded, "early", events.Fields{"transport": "stdio"})
	bus.Publish(events.KindConnected, "early", events.Fields{"attempt": 1, "tools": 3})

	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	bus.Publish(events.KindToolsChanged, "early", events.Fields{"added": []string{"new"}})
	bus.Publish(events.KindToolCall, "early", events.Fields{"tool": "echo", "duration_ms": 10})
	bus.Publish(events.KindAdded, "late", events.Fields{"transport": "http"})

	var m hud.Model
	m.ApplyAll(bus.History(0)) // all five
	bus.Publish(events.KindConnected, "late", events.Fields{"attempt": 1, "tools": 1})
	for {
		e, ok, err := sub.TryRecv()
		require.NoError(t, err)
		if !ok {
			break
		}
		m.Apply(e) // three already applied, one new
	}
	early := row(t, &m, t0, "early")
	assert.Equal(t, 4, early.Tools, "tools_changed counted once")
	assert.Equal(t, 1, early.Calls, "tool_call counted once")
	assert.Equal(t, hud.StateConnected, early.State)
	assert.Equal(t, hud.StateConnected, row(t, &m, t0, "late").State)
	assert.Zero(t, m.Missed())
}

// A subscriber that falls behind gets a lagged notice; the model counts it,
// keeps every row it has, and each row catches up with its server's next
// event.
func TestHUDModelLagged(t *testing.T) {
	bus := events.NewBus(events.Options{Now: func() time.Time { return t0 }})
	defer bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{QueueSize: 4})
	defer sub.Close()
	var m hud.Model
	drain := func() {
		for {
			e, ok, err := sub.TryRecv()
			require.NoError(t, err)
			if !ok {
				return
			}
			m.Apply(e)
		}
	}
	bus.Publish(events.KindAdded, "a", events.Fields{"transport": "stdio"})
	bus.Publish(events.KindConnected, "a", events.Fields{"attempt": 1, "tools": 2})
	drain()
	for range 10 {
		bus.Publish(events.KindToolCall, "a", events.Fields{"tool": "echo", "duration_ms": 3})
	}
	bus.Publish(events.KindBackoff, "a", events.Fields{"attempt": 1, "delay_ms": 500, "error": "lost"})
	drain()
	assert.Equal(t, uint64(7), m.Missed(), "11 published into a queue of 4")
	r := row(t, &m, t0, "a")
	assert.Equal(t, hud.StateBackoff, r.State, "the newest events still applied")
	assert.Equal(t, 3, r.Calls)
	assert.Equal(t, 2, r.Tools)
	assert.Contains(t, hud.Lines(m.View(t0), hud.Layout{Width: 80, Missed: m.Missed()})[0], "missed 7 events")

	// Recv gives the same notice; the model is fine after it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 6 {
		bus.Publish(events.KindToolCall, "a", events.Fields{"tool": "echo", "duration_ms": 3})
	}
	e, err := sub.Recv(ctx)
	require.NoError(t, err)
	require.Equal(t, events.KindLagged, e.Kind)
	m.Apply(e)
	drain()
	assert.Equal(t, uint64(9), m.Missed())
	assert.Equal(t, 7, row(t, &m, t0, "a").Calls)
}

// Error text is shown on one line, whatever the server put in it: line
// breaks and tabs fold to spaces, and escape sequences, bidi overrides and
// zero-width characters are written out rather than left for a terminal.
func TestHUDModelErrorIsOneCleanLine(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "evil", events.Fields{"transport": "stdio"})
	s.at(0, events.KindDisconnected, "evil", events.Fields{"error": "exit 1:\n\tstderr: \x1b[2J\x1b[31mred\x1b[0m \u202egnp\u200b\r\n"})
	r := row(t, s.model(), t0, "evil")
	assert.Equal(t, `exit 1: stderr: \x1b[2J\x1b[31mred\x1b[0m \u202egnp\u200b`, r.Error)
}

// A server declared with enabled = false publishes only added.
func TestHUDModelAddedDisabled(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "off", events.Fields{"transport": "stdio", "enabled": false})
	s.at(0, events.KindAdded, "on", events.Fields{"transport": "stdio"})
	m := s.model()
	assert.Equal(t, hud.StateDisabled, row(t, m, t0, "off").State)
	assert.Equal(t, hud.StateConnecting, row(t, m, t0, "on").State)
}

// A per-client server's row is its own session's; its clients' sessions
// only count, whatever their own lifecycle does.
func TestHUDModelClientSessions(t *testing.T) {
	var s script
	s.at(0, events.KindAdded, "pc", events.Fields{"transport": "stdio"})
	s.at(0, events.KindConnected, "pc", events.Fields{"attempt": 1, "tools": 1})
	s.at(time.Second, events.KindSessionOpened, "pc", events.Fields{"client": "a", "sessions": 1, "max_sessions": 2})
	s.at(time.Second, events.KindConnecting, "pc", events.Fields{"client": "a", "attempt": 1})
	s.at(time.Second, events.KindSessionOpened, "pc", events.Fields{"client": "b", "sessions": 2, "max_sessions": 2})
	s.at(time.Second, events.KindBackoff, "pc", events.Fields{"client": "b", "attempt": 1, "delay_ms": 100, "error": "boom"})
	s.at(time.Second, events.KindToolCall, "pc", events.Fields{"client": "a", "tool": "t", "duration_ms": 2.0, "is_error": false})
	m := s.model()
	assert.Equal(t, "● pc  stdio  1 tool   2.0ms  2 client sessions", line(t, m, t0.Add(2*time.Second), "pc"))
	s.at(3*time.Second, events.KindSessionClosed, "pc", events.Fields{"client": "a", "reason": "client left", "sessions": 1})
	assert.Equal(t, "● pc  stdio  1 tool   2.0ms  1 client session", line(t, s.model(), t0.Add(4*time.Second), "pc"))
}

// A server waiting for a login shows what to run first on its line: the
// Lua call, and the shell command when the display knows it.
func TestUnauthorizedShowsLoginCommand(t *testing.T) {
	unauthorized := events.Event{Kind: events.KindUnauthorized, Server: "saas", Time: time.Now(),
		Fields: events.Fields{"error": "server \"saas\": initialize: not logged in; …", "remedy": "login"}}
	m := hud.Model{LoginCommand: func(server string) string { return "mcpvisor login -c other.lua " + server }}
	m.Apply(unauthorized)
	rows := m.View(time.Now())
	require.Len(t, rows, 1)
	require.True(t, strings.HasPrefix(rows[0].Error, `run mcpvisor login -c other.lua saas or mcp_login("saas") · server "saas": initialize: not logged in`), rows[0].Error)

	var lua hud.Model
	lua.Apply(unauthorized)
	require.True(t, strings.HasPrefix(lua.View(time.Now())[0].Error, `run mcp_login("saas") · server "saas"`), lua.View(time.Now())[0].Error)
}
