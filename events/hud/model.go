package hud

import (
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

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
	// endpoints is what the gateway's endpoints cost, as SetEndpoints
	// last said; nil without a gateway.
	endpoints []Endpoint
}

// server is one server's row in the making.
type server struct {
	name        string
	state       State
	transport   string
	tools       int
	tokens      int     // what the tools' definitions cost, as SetTokens last said
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

// createdBy reports whether an event gives an unknown server a row: those
// the server's supervisor publishes while the server exists. The others
// (tool_call, tools_changed, notifications, …) can come from other
// goroutines after removed, and must not bring a removed server back.
func createdBy(p events.Payload) bool {
	switch p.(type) {
	case manager.Added, manager.Connecting, manager.Connected, manager.Disconnected,
		manager.BackingOff, manager.Failed, manager.Unauthorized, manager.CircuitChanged,
		manager.Idle, manager.Closing, manager.Disabled, manager.SessionReinitialized:
		return true
	}
	return false
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
	if _, ok := e.Payload.(manager.Removed); ok {
		delete(m.servers, e.Server)
		return
	}
	if e.Client != "" {
		// A client's own session of a per-client server: its lifecycle is
		// not the server's; the row counts the sessions. (Its calls count
		// in the server's metrics.)
		s := m.servers[e.Server]
		switch p := e.Payload.(type) {
		case manager.SessionOpened:
			if s != nil {
				s.sessions = p.Sessions
			}
		case manager.SessionClosed:
			if s != nil {
				s.sessions = p.Sessions
			}
		}
		return
	}
	s := m.servers[e.Server]
	if _, added := e.Payload.(manager.Added); added || (s == nil && createdBy(e.Payload)) {
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

// SetTokens records what the definitions of server's tools cost a model in
// tokens, as its owner counted them (the count is too slow to make from
// events as they are applied); a server the model does not show is
// ignored.
func (m *Model) SetTokens(server string, n int) {
	if s := m.servers[server]; s != nil {
		s.tokens = max(n, 0)
	}
}

// UpdateMetrics takes each shown server's request counters from get (the
// manager's Metrics): its calls, failed calls and latency. Its owner calls
// it before a View, on the display's tick: a call is counted by the
// manager, and wakes no display. A server get has no metrics for keeps
// what it had.
func (m *Model) UpdateMetrics(get func(server string) (manager.Metrics, error)) {
	for name, s := range m.servers {
		mt, err := get(name)
		if err != nil {
			continue
		}
		// Calls its caller gave up on count neither as the server's
		// latency nor as its failures.
		s.calls = int(mt.Requests - mt.Errors.Cancelled)
		s.failedCalls = int(mt.Errors.Total())
		s.latency = float64(mt.Latency) / float64(time.Millisecond)
	}
}

// Len is the number of servers the model shows.
func (m *Model) Len() int { return len(m.servers) }

// apply folds one of the server's own events into its row, by the type
// of its payload; loginCommand is the model's LoginCommand.
func (s *server) apply(e events.Event, loginCommand func(string) string) {
	switch p := e.Payload.(type) {
	case manager.Added:
		s.transport = string(p.Transport)
		if p.Disabled {
			s.state = StateDisabled
		}
	case manager.Connecting:
		s.state = StateConnecting
		s.attempt = p.Attempt
		s.probe = p.Probe
		s.waiting = p.Waiting
		s.retryAt = time.Time{}
		s.probeAt = time.Time{}
	case manager.Connected:
		s.state = StateConnected
		s.tools = p.Tools
		s.attempt = 0
		s.probe = false
		s.retryAt = time.Time{}
		s.probeAt = time.Time{}
		s.circuit = CircuitClosed // a success closes the breaker
		s.err = ""
	case manager.Disconnected:
		s.setErr(p.Error)
	case manager.HealthFailed:
		s.setErr(p.Error)
	case manager.BackingOff:
		s.state = StateBackoff
		s.attempt = p.Attempt + 1 // the attempt the retry makes
		s.retryAt = e.Time.Add(p.Delay)
		s.setErr(p.Error)
	case manager.Unauthorized:
		s.state = StateUnauthorized
		s.retryAt = time.Time{}
		s.setErr(p.Error)
		if p.Remedy == manager.RemedyLogin {
			// What to run comes first, where a narrow line still shows it.
			run := fmt.Sprintf("mcp_login(%q)", e.Server)
			if loginCommand != nil {
				run = loginCommand(e.Server) + " or " + run
			}
			s.err = oneLine("run " + run + " · " + s.err)
		}
	case manager.Failed:
		s.state = StateFailed
		s.attempt = p.Attempts
		s.retryAt = time.Time{}
		s.setErr(p.Error)
	case manager.CircuitChanged:
		s.circuit = Circuit(p.To.String())
		s.probeAt = time.Time{}
		switch {
		case p.To == manager.CircuitOpen:
			s.state = StateOpen
			s.retryAt = time.Time{}
			s.probeAt = e.Time.Add(p.ProbeIn)
		case s.state == StateOpen:
			s.state = StateConnecting // the probe, or an attempt after a reset
		}
		s.setErr(p.Error)
	case manager.Idle:
		s.state = StateIdle
	case manager.Closing:
		s.state = StateClosing
	case manager.Disabled:
		s.state = StateDisabled
		s.attempt = 0
		s.retryAt = time.Time{}
		s.probeAt = time.Time{}
	case manager.ItemsChanged:
		if p.Of == events.KindToolsChanged {
			s.tools = max(s.tools+len(p.Added)-len(p.Removed), 0)
		}
	}
}

// setErr records an event's error, if it has one.
func (s *server) setErr(msg string) {
	if msg != "" {
		s.err = oneLine(msg)
	}
}
