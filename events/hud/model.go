package hud

import (
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
)

// latencyWeight is the newest sample's weight in the latency average, as in
// the manager's metrics.
const latencyWeight = 0.2

// Model is what the HUD knows of each server, built from events. The zero
// value is an empty model ready to use. See the package documentation for
// what each event kind contributes.
type Model struct {
	// LoginCommand, if set, is the shell command that logs in to a
	// server: a server waiting for a login shows it beside the Lua call.
	LoginCommand func(server string) string

	servers map[string]*server // by name, as the events carry it
	seq     uint64             // the last Seq applied
	missed  uint64             // events this model's source dropped (lagged)
	clients int                // gateway clients connected
}

// server is one server's row in the making.
type server struct {
	name        string
	state       State
	transport   string
	tools       int
	latency     float64 // milliseconds, moving average
	calls       int
	failedCalls int
	attempt     int
	probe       bool      // the attempt in progress is a half-open probe
	retryAt     time.Time // in backoff: when the next attempt starts
	circuit     Circuit
	probeAt     time.Time // circuit open: when the probe is due
	err         string    // last error, one line
	waiting     string    // connecting: what the attempt waits for
	sessions    int       // per-client server: its clients' sessions
}

// createdBy are the kinds that give an unknown server a row: those the
// server's supervisor publishes while the server exists. The others
// (tool_call, tools_changed, notifications, …) can come from other
// goroutines after removed, and must not bring a removed server back.
var createdBy = map[events.Kind]bool{
	events.KindAdded:                true,
	events.KindConnecting:           true,
	events.KindConnected:            true,
	events.KindDisconnected:         true,
	events.KindBackoff:              true,
	events.KindFailed:               true,
	events.KindUnauthorized:         true,
	events.KindCircuit:              true,
	events.KindIdle:                 true,
	events.KindClosing:              true,
	events.KindDisabled:             true,
	events.KindSessionReinitialized: true,
}

// Apply folds one event into the model. Events with a Seq at or below the
// last one applied are ignored, so a bus's history followed by a
// subscription made before it can be applied without double counting.
func (m *Model) Apply(e events.Event) {
	if e.Kind == events.KindLagged {
		m.missed += uint64(max(e.Int("missed"), 0))
		return
	}
	if e.Seq != 0 {
		if e.Seq <= m.seq {
			return
		}
		m.seq = e.Seq
	}
	switch e.Kind {
	case events.KindClientConnected:
		m.clients++
	case events.KindClientDisconnected:
		m.clients = max(m.clients-1, 0)
	}
	if e.Server == "" {
		return
	}
	if e.Kind == events.KindRemoved {
		delete(m.servers, e.Server)
		return
	}
	if e.Text("client") != "" && e.Kind != events.KindToolCall {
		// A client's own session of a per-client server: its lifecycle is
		// not the server's; the row counts the sessions.
		if s := m.servers[e.Server]; s != nil && (e.Kind == events.KindSessionOpened || e.Kind == events.KindSessionClosed) {
			s.sessions = int(e.Int("sessions"))
		}
		return
	}
	s := m.servers[e.Server]
	if e.Kind == events.KindAdded || (s == nil && createdBy[e.Kind]) {
		if m.servers == nil {
			m.servers = make(map[string]*server)
		}
		s = &server{name: e.Server, state: StateConnecting, circuit: CircuitClosed}
		m.servers[e.Server] = s
	}
	if s == nil {
		return
	}
	s.apply(e, m.LoginCommand)
}

// ApplyAll applies each event in order.
func (m *Model) ApplyAll(evs []events.Event) {
	for _, e := range evs {
		m.Apply(e)
	}
}

// Missed is how many events the model's source reported dropped
// (the sum of lagged notices): rows may be stale until their server's
// next event.
func (m *Model) Missed() uint64 { return m.missed }

// Clients is how many MCP clients the gateway serves (client_connected
// events less client_disconnected ones).
func (m *Model) Clients() int { return m.clients }

// Len is the number of servers the model shows.
func (m *Model) Len() int { return len(m.servers) }

func (s *server) apply(e events.Event, loginCommand func(string) string) {
	switch e.Kind {
	case events.KindAdded:
		s.transport = e.Text("transport")
		if enabled, ok := e.Fields["enabled"].(bool); ok && !enabled {
			s.state = StateDisabled
		}
	case events.KindConnecting:
		s.state = StateConnecting
		s.attempt = int(e.Int("attempt"))
		s.probe, _ = e.Fields["probe"].(bool)
		s.waiting = e.Text("waiting")
		s.retryAt = time.Time{}
		s.probeAt = time.Time{}
	case events.KindConnected:
		s.state = StateConnected
		s.tools = int(e.Int("tools"))
		s.attempt = 0
		s.probe = false
		s.retryAt = time.Time{}
		s.probeAt = time.Time{}
		s.circuit = CircuitClosed // a success closes the breaker
		s.err = ""
	case events.KindDisconnected, events.KindHealthFailed:
		s.setErr(e)
	case events.KindBackoff:
		s.state = StateBackoff
		s.attempt = int(e.Int("attempt")) + 1 // the attempt the retry makes
		s.retryAt = e.Time.Add(millis(e, "delay_ms"))
		s.setErr(e)
	case events.KindUnauthorized:
		s.state = StateUnauthorized
		s.retryAt = time.Time{}
		s.setErr(e)
		if e.Text("remedy") == "login" {
			// What to run comes first, where a narrow line still shows it.
			run := fmt.Sprintf("mcp_login(%q)", e.Server)
			if loginCommand != nil {
				run = loginCommand(e.Server) + " or " + run
			}
			s.err = oneLine("run " + run + " · " + s.err)
		}
	case events.KindFailed:
		s.state = StateFailed
		s.attempt = int(e.Int("attempts"))
		s.retryAt = time.Time{}
		s.setErr(e)
	case events.KindCircuit:
		s.circuit = Circuit(e.Text("to"))
		s.probeAt = time.Time{}
		switch {
		case s.circuit == CircuitOpen:
			s.state = StateOpen
			s.retryAt = time.Time{}
			s.probeAt = e.Time.Add(millis(e, "probe_in_ms"))
		case s.state == StateOpen:
			s.state = StateConnecting // the probe, or an attempt after a reset
		}
		s.setErr(e)
	case events.KindIdle:
		s.state = StateIdle
	case events.KindClosing:
		s.state = StateClosing
	case events.KindDisabled:
		s.state = StateDisabled
		s.attempt = 0
		s.retryAt = time.Time{}
		s.probeAt = time.Time{}
	case events.KindToolsChanged:
		s.tools = max(s.tools+count(e.Fields["added"])-count(e.Fields["removed"]), 0)
	case events.KindToolCall:
		if cancelled, _ := e.Fields["cancelled"].(bool); cancelled {
			break // the caller gave up: neither the server's latency nor its failure
		}
		d := float(e.Fields["duration_ms"])
		s.calls++
		if s.calls == 1 {
			s.latency = d
		} else {
			s.latency += latencyWeight * (d - s.latency)
		}
		if isErr, _ := e.Fields["is_error"].(bool); isErr || e.Text("code") != "" {
			s.failedCalls++
		}
	}
}

// setErr records the event's error field, if it has one.
func (s *server) setErr(e events.Event) {
	if msg := e.Text("error"); msg != "" {
		s.err = oneLine(msg)
	}
}

// millis reads a field of milliseconds as a duration.
func millis(e events.Event, key string) time.Duration {
	return time.Duration(float(e.Fields[key]) * float64(time.Millisecond))
}

// float reads a numeric field of any of the event's number types.
func float(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// count is the length of a list field ([]string, or []any once through JSON).
func count(v any) int {
	switch x := v.(type) {
	case []string:
		return len(x)
	case []any:
		return len(x)
	}
	return 0
}
