package hud_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/events/hud"
	"github.com/mcpvisor/mcpvisor/manager"
)

// t0 is the time of the first event of every sequence.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// script builds an event sequence as a bus would stamp it: Seq from 1 up,
// Time from t0 plus the offset given.
type script struct {
	seq uint64
	evs []events.Event
}

// at adds an event of server with payload p, as the bus's Emit makes it.
func (s *script) at(offset time.Duration, server string, p events.Payload) *script {
	return s.atFor(offset, server, "", p)
}

// atFor adds an event of client's own session of server.
func (s *script) atFor(offset time.Duration, server, client string, p events.Payload) *script {
	s.seq++
	s.evs = append(s.evs, events.Event{Seq: s.seq, Time: t0.Add(offset), Kind: p.Kind(), Server: server, Client: client,
		Fields: p.Fields(), Payload: p})
	return s
}

// plain adds an event published without a payload, as kind and fields.
func (s *script) plain(offset time.Duration, kind events.Kind, server string, fields events.Fields) *script {
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
	s.at(0, "demo", manager.Added{Transport: manager.TransportStdio, Endpoint: "demo-server"})
	m := s.model()
	r := row(t, m, t0, "demo")
	assert.Equal(t, hud.StateConnecting, r.State, "a new server is connecting")
	assert.Equal(t, "◌", r.Glyph)

	s.at(10*time.Millisecond, "demo", manager.Connecting{Attempt: 1})
	s.at(50*time.Millisecond, "demo", manager.Connected{Attempt: 1, Tools: 4, PID: 42, Initialized: true, Protocol: "2025-06-18"})
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
	s.at(0, "c", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "c", manager.Connecting{Attempt: 1, Waiting: "max connections (2) reached"})
	m := s.model()
	r := row(t, m, t0, "c")
	assert.Equal(t, "max connections (2) reached", r.Waiting)
	assert.Equal(t, "◌ c  stdio  0 tools  waiting: max connections (2) reached", line(t, m, t0, "c"))

	s.at(time.Second, "c", manager.Connecting{Attempt: 1})
	m = s.model()
	assert.Empty(t, row(t, m, t0.Add(time.Second), "c").Waiting, "the attempt has started")
	assert.Equal(t, "◌ c  stdio  0 tools  connecting", line(t, m, t0.Add(time.Second), "c"))
}

func TestHUDModelBackoffCountdown(t *testing.T) {
	var s script
	s.at(0, "broken", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "broken", manager.Connecting{Attempt: 1})
	s.at(time.Second, "broken", manager.BackingOff{Attempt: 2, Delay: 2400 * time.Millisecond, Error: "server \"broken\": spawn: fork/exec /nonexistent/prog:\nno such file or directory"})
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
	s.at(3400*time.Millisecond, "broken", manager.Connecting{Attempt: 3})
	m = s.model()
	r := row(t, m, t0.Add(4*time.Second), "broken")
	assert.Equal(t, hud.StateConnecting, r.State)
	assert.Zero(t, r.RetryIn)
	assert.Contains(t, line(t, m, t0.Add(4*time.Second), "broken"), "connecting (attempt 3) · server \"broken\": spawn:",
		"the last error stays until a connect succeeds")
}

func TestHUDModelFailed(t *testing.T) {
	var s script
	s.at(0, "gone", manager.Added{Transport: manager.TransportHTTP})
	s.at(0, "gone", manager.BackingOff{Attempt: 3, Delay: 400 * time.Millisecond, Error: "refused"})
	s.at(time.Second, "gone", manager.Failed{Attempts: 4, Error: "gave up after 4 attempts: refused"})
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
	s.at(0, "remote", manager.Added{Transport: manager.TransportHTTP})
	s.at(0, "remote", manager.BackingOff{Attempt: 5, Delay: 3000 * time.Millisecond, Error: "connection refused"})
	s.at(time.Second, "remote", manager.CircuitChanged{From: manager.CircuitClosed, To: manager.CircuitOpen, Failures: 5, ProbeIn: 12000 * time.Millisecond, Error: "connection refused"})
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
	s.at(13*time.Second, "remote", manager.CircuitChanged{From: manager.CircuitOpen, To: manager.CircuitHalfOpen})
	s.at(13*time.Second, "remote", manager.Connecting{Attempt: 6, Probe: true})
	m = s.model()
	r = row(t, m, t0.Add(13*time.Second), "remote")
	assert.Equal(t, hud.StateConnecting, r.State)
	assert.True(t, r.Probe)
	assert.Equal(t, hud.CircuitHalfOpen, r.Circuit)
	assert.Equal(t, "◌ remote  http  0 tools  probing (attempt 6) · connection refused", line(t, m, t0.Add(13*time.Second), "remote"))

	// Recovery clears the error and closes the circuit.
	s.at(14*time.Second, "remote", manager.Connected{Attempt: 6, Tools: 2})
	s.at(14*time.Second, "remote", manager.CircuitChanged{From: manager.CircuitHalfOpen, To: manager.CircuitClosed})
	m = s.model()
	r = row(t, m, t0.Add(15*time.Second), "remote")
	assert.Equal(t, hud.Row{Name: "remote", State: hud.StateConnected, Glyph: "●", Transport: "http", Tools: 2, Circuit: hud.CircuitClosed}, r)
	assert.Equal(t, "● remote  http  2 tools", line(t, m, t0.Add(15*time.Second), "remote"))
}

func TestHUDModelToolsAndLatency(t *testing.T) {
	var s script
	s.at(0, "demo", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "demo", manager.Connected{Attempt: 1, Tools: 4})
	s.at(0, "demo", manager.ItemsChanged{Of: events.KindToolsChanged, Added: []string{"a", "b"}, Removed: []string{"echo"}})
	m := s.model()
	r := row(t, m, t0, "demo")
	assert.Equal(t, 5, r.Tools, "4 + 2 added - 1 removed")
	assert.Zero(t, r.Calls, "no metrics yet")
	assert.Equal(t, "● demo  stdio  5 tools", line(t, m, t0, "demo"))

	// The calls, their failures and latency are the manager's counters.
	// Calls the caller gave up on are neither calls nor failures.
	m.UpdateMetrics(func(server string) (manager.Metrics, error) {
		if server != "demo" {
			return manager.Metrics{}, errors.New("no such server")
		}
		return manager.Metrics{Server: "demo", Requests: 5, Latency: 112800 * time.Microsecond,
			Errors: manager.ErrorCounts{Tool: 1, Timeout: 1, Cancelled: 1}}, nil
	})
	r = row(t, m, t0, "demo")
	assert.Equal(t, 4, r.Calls)
	assert.Equal(t, 2, r.FailedCalls, "an error result and a timeout")
	assert.Equal(t, 112800*time.Microsecond, r.Latency)
	assert.Equal(t, "● demo  stdio  5 tools  112ms  2 failed calls", line(t, m, t0, "demo"))
	assert.Empty(t, r.Error, "a failed call is not the server's error")

	// The count never goes below zero, whatever was missed.
	s.at(0, "demo", manager.ItemsChanged{Of: events.KindToolsChanged, Removed: []string{"a", "b", "c", "d", "e", "f"}})
	assert.Equal(t, 0, row(t, s.model(), t0, "demo").Tools)
}

func TestHUDModelOtherStates(t *testing.T) {
	var s script
	s.at(0, "off", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "off", manager.Disabled{})
	s.at(0, "sleepy", manager.Added{Transport: manager.TransportSSE})
	s.at(0, "sleepy", manager.Connected{Attempt: 1, Tools: 1})
	s.at(0, "sleepy", manager.Idle{After: time.Minute})
	s.at(0, "leaving", manager.Added{Transport: manager.TransportHTTP})
	s.at(0, "leaving", manager.Closing{Reason: "removed"})
	s.at(0, "sick", manager.Added{Transport: manager.TransportHTTP})
	s.at(0, "sick", manager.Connected{Attempt: 1, Tools: 3})
	s.at(0, "sick", manager.HealthFailed{Error: "ping timed out"})
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
	s.at(0, "a", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "b", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "a", manager.Connected{Tools: 1})
	s.at(0, "a", manager.Removed{})
	// A call that finished after the removal must not bring the row back.
	s.at(0, "a", manager.ToolCall{Tool: "echo", Duration: 5 * time.Millisecond})
	s.at(0, "a", manager.ItemsChanged{Of: events.KindToolsChanged, Added: []string{"x"}})
	m := s.model()
	rows := m.View(t0)
	require.Len(t, rows, 1)
	assert.Equal(t, "b", rows[0].Name)

	// Added again, it starts afresh.
	s.at(0, "a", manager.Added{Transport: manager.TransportHTTP})
	r := row(t, s.model(), t0, "a")
	assert.Equal(t, hud.Row{Name: "a", State: hud.StateConnecting, Glyph: "◌", Transport: "http", Circuit: hud.CircuitClosed}, r)
}

// A server the model first hears of through a lifecycle event (its added
// left a bounded history) still gets a row.
func TestHUDModelServerWithoutAdded(t *testing.T) {
	var s script
	s.plain(0, events.KindNotification, "x", events.Fields{"method": "notifications/message"})
	s.at(0, "x", manager.BackingOff{Attempt: 1, Delay: 1000 * time.Millisecond, Error: "boom"})
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
	bus.Emit("early", "", manager.Added{Transport: manager.TransportStdio})
	bus.Emit("early", "", manager.Connected{Attempt: 1, Tools: 3})

	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	bus.Emit("early", "", manager.ItemsChanged{Of: events.KindToolsChanged, Added: []string{"new"}})
	bus.Emit("early", "", manager.HealthFailed{Error: "ping timed out"})
	bus.Emit("late", "", manager.Added{Transport: manager.TransportHTTP})

	var m hud.Model
	m.ApplyAll(bus.History(0)) // all five
	bus.Emit("late", "", manager.Connected{Attempt: 1, Tools: 1})
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
	assert.Equal(t, "ping timed out", early.Error)
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
	bus.Emit("a", "", manager.Added{Transport: manager.TransportStdio})
	bus.Emit("a", "", manager.Connected{Attempt: 1, Tools: 2})
	drain()
	for range 10 {
		bus.Publish(events.KindNotification, "a", events.Fields{"method": "notifications/message"})
	}
	bus.Emit("a", "", manager.BackingOff{Attempt: 1, Delay: 500 * time.Millisecond, Error: "lost"})
	drain()
	assert.Equal(t, uint64(7), m.Missed(), "11 published into a queue of 4")
	r := row(t, &m, t0, "a")
	assert.Equal(t, hud.StateBackoff, r.State, "the newest events still applied")
	assert.Equal(t, 2, r.Tools)
	assert.Contains(t, hud.Lines(m.View(t0), hud.Layout{Width: 80, Missed: m.Missed()})[0], "missed 7 events")

	// Recv gives the same notice; the model is fine after it.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range 6 {
		bus.Publish(events.KindNotification, "a", events.Fields{"method": "notifications/message"})
	}
	e, err := sub.Recv(ctx)
	require.NoError(t, err)
	require.Equal(t, events.KindLagged, e.Kind)
	m.Apply(e)
	drain()
	assert.Equal(t, uint64(9), m.Missed())
	assert.Equal(t, hud.StateBackoff, row(t, &m, t0, "a").State)
}

// Error text is shown on one line, whatever the server put in it: line
// breaks and tabs fold to spaces, and escape sequences, bidi overrides and
// zero-width characters are written out rather than left for a terminal.
func TestHUDModelErrorIsOneCleanLine(t *testing.T) {
	var s script
	s.at(0, "evil", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "evil", manager.Disconnected{Error: "exit 1:\n\tstderr: \x1b[2J\x1b[31mred\x1b[0m \u202egnp\u200b\r\n"})
	r := row(t, s.model(), t0, "evil")
	assert.Equal(t, `exit 1: stderr: \x1b[2J\x1b[31mred\x1b[0m \u202egnp\u200b`, r.Error)
}

// A server declared with enabled = false publishes only added.
func TestHUDModelAddedDisabled(t *testing.T) {
	var s script
	s.at(0, "off", manager.Added{Transport: manager.TransportStdio, Disabled: true})
	s.at(0, "on", manager.Added{Transport: manager.TransportStdio})
	m := s.model()
	assert.Equal(t, hud.StateDisabled, row(t, m, t0, "off").State)
	assert.Equal(t, hud.StateConnecting, row(t, m, t0, "on").State)
}

// A per-client server's row is its own session's; its clients' sessions
// only count, whatever their own lifecycle does.
func TestHUDModelClientSessions(t *testing.T) {
	var s script
	s.at(0, "pc", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "pc", manager.Connected{Attempt: 1, Tools: 1})
	s.atFor(time.Second, "pc", "a", manager.SessionOpened{Sessions: 1, MaxSessions: 2})
	s.atFor(time.Second, "pc", "a", manager.Connecting{Attempt: 1})
	s.atFor(time.Second, "pc", "b", manager.SessionOpened{Sessions: 2, MaxSessions: 2})
	s.atFor(time.Second, "pc", "b", manager.BackingOff{Attempt: 1, Delay: 100 * time.Millisecond, Error: "boom"})
	m := s.model()
	// Its clients' calls are counted in the server's metrics.
	m.UpdateMetrics(func(string) (manager.Metrics, error) {
		return manager.Metrics{Server: "pc", Requests: 1, Latency: 2 * time.Millisecond}, nil
	})
	assert.Equal(t, "● pc  stdio  1 tool   2.0ms  2 client sessions", line(t, m, t0.Add(2*time.Second), "pc"))
	s.atFor(3*time.Second, "pc", "a", manager.SessionClosed{Reason: "client left", Sessions: 1})
	m = s.model()
	m.UpdateMetrics(func(string) (manager.Metrics, error) {
		return manager.Metrics{Server: "pc", Requests: 1, Latency: 2 * time.Millisecond}, nil
	})
	assert.Equal(t, "● pc  stdio  1 tool   2.0ms  1 client session", line(t, m, t0.Add(4*time.Second), "pc"))
}

// A server waiting for a login shows what to run first on its line: the
// Lua call, and the shell command when the display knows it.
func TestUnauthorizedShowsLoginCommand(t *testing.T) {
	p := manager.Unauthorized{Error: "server \"saas\": initialize: not logged in; …", Remedy: manager.RemedyLogin}
	unauthorized := events.Event{Kind: p.Kind(), Server: "saas", Time: time.Now(), Fields: p.Fields(), Payload: p}
	m := hud.Model{LoginCommand: func(server string) string { return "mcpvisor login -c other.lua " + server }}
	m.Apply(unauthorized)
	rows := m.View(time.Now())
	require.Len(t, rows, 1)
	require.True(t, strings.HasPrefix(rows[0].Error, `run mcpvisor login -c other.lua saas or mcp_login("saas") · server "saas": initialize: not logged in`), rows[0].Error)

	var lua hud.Model
	lua.Apply(unauthorized)
	require.True(t, strings.HasPrefix(lua.View(time.Now())[0].Error, `run mcp_login("saas") · server "saas"`), lua.View(time.Now())[0].Error)
}
