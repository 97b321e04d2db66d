package manager

import (
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
)

// The lifecycle events the manager publishes on the bus, one type per
// kind: a consumer (the HUD) reads an event's Payload by type, and Fields
// renders it as the plain data Lua hooks, the log and mcp_events see. An
// event of a client's own session of a per-client server carries that
// client in [events.Event.Client] (and a client field).

// Added is published when a server is declared (kind added).
type Added struct {
	Transport Transport
	Endpoint  string
	// Disabled is set when it was declared with enabled = false: it starts
	// disabled, with no disabled event.
	Disabled bool
}

// Kind is added.
func (Added) Kind() events.Kind { return events.KindAdded }

// Fields renders transport, endpoint, and enabled = false when disabled.
func (p Added) Fields() events.Fields {
	f := events.Fields{"transport": string(p.Transport), "endpoint": p.Endpoint}
	if p.Disabled {
		f["enabled"] = false
	}
	return f
}

// Removed is the last event of a server (kind removed).
type Removed struct{ Reason string }

// Kind is removed.
func (Removed) Kind() events.Kind { return events.KindRemoved }

// Fields renders reason.
func (p Removed) Fields() events.Fields { return events.Fields{"reason": p.Reason} }

// Closing is published when a server is being removed, replaced or shut
// down (kind closing).
type Closing struct{ Reason string }

// Kind is closing.
func (Closing) Kind() events.Kind { return events.KindClosing }

// Fields renders reason.
func (p Closing) Fields() events.Fields { return events.Fields{"reason": p.Reason} }

// Disabled is published when a server is disabled (kind disabled).
type Disabled struct{}

// Kind is disabled.
func (Disabled) Kind() events.Kind { return events.KindDisabled }

// Fields renders nothing.
func (Disabled) Fields() events.Fields { return nil }

// Connecting is published when an attempt starts, or waits for a
// connection slot or a turn (kind connecting).
type Connecting struct {
	Attempt int
	Probe   bool   // the attempt is the half-open circuit's probe
	Waiting string // what it waits for, "" if it does not
}

// Kind is connecting.
func (Connecting) Kind() events.Kind { return events.KindConnecting }

// Fields renders attempt, and probe and waiting when set.
func (p Connecting) Fields() events.Fields {
	f := events.Fields{"attempt": p.Attempt}
	if p.Probe {
		f["probe"] = true
	}
	if p.Waiting != "" {
		f["waiting"] = p.Waiting
	}
	return f
}

// Connected is published when a session is up (kind connected).
type Connected struct {
	Attempt int
	Tools   int
	PID     int // the process of a stdio server, 0 for others
	// Initialized is set when the handshake's result is known: Protocol,
	// and (Described) the server's name and version.
	Initialized   bool
	Protocol      string
	Described     bool
	ServerName    string
	ServerVersion string
}

// Kind is connected.
func (Connected) Kind() events.Kind { return events.KindConnected }

// Fields renders attempt, tools, and pid, protocol, server_name and
// server_version when known.
func (p Connected) Fields() events.Fields {
	f := events.Fields{"attempt": p.Attempt, "tools": p.Tools}
	if p.PID != 0 {
		f["pid"] = p.PID
	}
	if p.Initialized {
		f["protocol"] = p.Protocol
	}
	if p.Described {
		f["server_name"] = p.ServerName
		f["server_version"] = p.ServerVersion
	}
	return f
}

// Disconnected is published when a session is lost or closed for a
// reconnect (kind disconnected).
type Disconnected struct{ Error string }

// Kind is disconnected.
func (Disconnected) Kind() events.Kind { return events.KindDisconnected }

// Fields renders error.
func (p Disconnected) Fields() events.Fields { return events.Fields{"error": p.Error} }

// BackingOff is published when a failed attempt (or an unproven session)
// waits before the next attempt (kind backoff).
type BackingOff struct {
	Attempt int // the attempt that failed
	Delay   time.Duration
	Error   string
}

// Kind is backoff.
func (BackingOff) Kind() events.Kind { return events.KindBackoff }

// Fields renders attempt, delay_ms and error.
func (p BackingOff) Fields() events.Fields {
	return events.Fields{"attempt": p.Attempt, "delay_ms": p.Delay.Milliseconds(), "error": p.Error}
}

// Failed is published when a server is given up on (kind failed).
type Failed struct {
	Attempts int
	Error    string
	Remedy   RemedyKind // what brings it back
}

// Kind is failed.
func (Failed) Kind() events.Kind { return events.KindFailed }

// Fields renders attempts, error and remedy.
func (p Failed) Fields() events.Fields {
	return events.Fields{"attempts": p.Attempts, "error": p.Error, "remedy": p.Remedy.String()}
}

// Unauthorized is published when a server answers 401 (kind
// unauthorized).
type Unauthorized struct {
	Challenge string // its WWW-Authenticate
	Error     string
	// Remedy is what it needs: a login (RemedyLogin), or credentials in
	// its declaration (RemedyCredentials).
	Remedy RemedyKind
}

// Kind is unauthorized.
func (Unauthorized) Kind() events.Kind { return events.KindUnauthorized }

// Fields renders challenge, error and remedy.
func (p Unauthorized) Fields() events.Fields {
	return events.Fields{"challenge": p.Challenge, "error": p.Error, "remedy": p.Remedy.String()}
}

// CircuitChanged is published when the circuit breaker changes state
// (kind circuit).
type CircuitChanged struct {
	From, To Circuit
	// When it opens: the failures that opened it, when the probe is due
	// and the last error.
	Failures int
	ProbeIn  time.Duration
	Error    string
	// Reason is "reset" when a reconnect closed it.
	Reason string
}

// Kind is circuit.
func (CircuitChanged) Kind() events.Kind { return events.KindCircuit }

// Fields renders from and to, and failures, probe_in_ms and error when it
// opens, reason when set.
func (p CircuitChanged) Fields() events.Fields {
	f := events.Fields{"from": p.From.String(), "to": p.To.String()}
	if p.To == CircuitOpen {
		f["failures"] = p.Failures
		f["probe_in_ms"] = p.ProbeIn.Milliseconds()
		f["error"] = p.Error
	}
	if p.Reason != "" {
		f["reason"] = p.Reason
	}
	return f
}

// HealthFailed is published when a health ping fails (kind
// health_failed).
type HealthFailed struct{ Error string }

// Kind is health_failed.
func (HealthFailed) Kind() events.Kind { return events.KindHealthFailed }

// Fields renders error.
func (p HealthFailed) Fields() events.Fields { return events.Fields{"error": p.Error} }

// Idle is published when a session is closed for inactivity, or an idle
// server stops waiting for a slot (kind idle).
type Idle struct {
	After  time.Duration // the idle timeout that passed
	Reason string        // why, when it is not the timeout
}

// Kind is idle.
func (Idle) Kind() events.Kind { return events.KindIdle }

// Fields renders idle_ms, or reason.
func (p Idle) Fields() events.Fields {
	if p.Reason != "" {
		return events.Fields{"reason": p.Reason}
	}
	return events.Fields{"idle_ms": p.After.Milliseconds()}
}

// ItemsChanged is published when a re-listing found items added or
// removed (kind tools_changed, resources_changed or prompts_changed).
type ItemsChanged struct {
	Of             events.Kind // KindToolsChanged, KindResourcesChanged or KindPromptsChanged
	Added, Removed []string
}

// Kind is Of.
func (p ItemsChanged) Kind() events.Kind { return p.Of }

// Fields renders added and removed (empty lists, not nil).
func (p ItemsChanged) Fields() events.Fields {
	return events.Fields{"added": p.Added, "removed": p.Removed}
}

// ToolCall is published when a tool call ends (kind tool_call).
type ToolCall struct {
	Tool     string
	Duration time.Duration
	IsError  bool   // the result said isError
	Client   string // the gateway client that called, "" for others
	// Error and Code, when the call failed; Cancelled when its caller gave
	// up on it.
	Error     string
	Code      Code
	Cancelled bool
}

// Kind is tool_call.
func (ToolCall) Kind() events.Kind { return events.KindToolCall }

// Fields renders tool, duration_ms (fractional), is_error, and client,
// error, code and cancelled when set.
func (p ToolCall) Fields() events.Fields {
	f := events.Fields{"tool": p.Tool, "duration_ms": float64(p.Duration.Microseconds()) / 1000, "is_error": p.IsError}
	if p.Client != "" {
		f["client"] = p.Client
	}
	if p.Error != "" {
		f["error"] = p.Error
	}
	if p.Code != "" {
		f["code"] = string(p.Code)
	}
	if p.Cancelled {
		f["cancelled"] = true
	}
	return f
}

// SessionOpened is published when a client of a per-client server gets a
// session of its own (kind session_opened).
type SessionOpened struct {
	Sessions, MaxSessions int
}

// Kind is session_opened.
func (SessionOpened) Kind() events.Kind { return events.KindSessionOpened }

// Fields renders sessions and max_sessions.
func (p SessionOpened) Fields() events.Fields {
	return events.Fields{"sessions": p.Sessions, "max_sessions": p.MaxSessions}
}

// SessionClosed is published when a client's session of a per-client
// server is given back (kind session_closed).
type SessionClosed struct {
	Reason   string
	Sessions int // those left
}

// Kind is session_closed.
func (SessionClosed) Kind() events.Kind { return events.KindSessionClosed }

// Fields renders reason and sessions.
func (p SessionClosed) Fields() events.Fields {
	return events.Fields{"reason": p.Reason, "sessions": p.Sessions}
}

// HealthUnsupported is published when a server answers its health check
// with -32601 (ping, or server/discover on a session on 2026-07-28):
// liveness is judged passively from then on (kind health_unsupported).
type HealthUnsupported struct{ Error string }

// Kind is health_unsupported.
func (HealthUnsupported) Kind() events.Kind { return events.KindHealthUnsupported }

// Fields renders error.
func (p HealthUnsupported) Fields() events.Fields { return events.Fields{"error": p.Error} }

// SessionReinitialized is published when an expired HTTP session was
// replaced at once (kind session_reinitialized).
type SessionReinitialized struct{}

// Kind is session_reinitialized.
func (SessionReinitialized) Kind() events.Kind { return events.KindSessionReinitialized }

// Fields renders nothing.
func (SessionReinitialized) Fields() events.Fields { return nil }

// Refused is published for each tool or prompt a server lists that cannot
// be offered (kind refused): its name is empty, too long, holds control or
// invisible characters, or looks like another of the server's.
type Refused struct {
	Item   string // "tool" or "prompt"
	Name   string // as the server sent it
	Reason string
}

// Kind is refused.
func (Refused) Kind() events.Kind { return events.KindRefused }

// Fields renders item, name (quoted, with what is invisible escaped) and
// reason.
func (p Refused) Fields() events.Fields {
	return events.Fields{"item": p.Item, "name": fmt.Sprintf("%+q", p.Name), "reason": p.Reason}
}

// NotificationsDropped is published when a server's notifications are
// over the rate it may send them at, once when dropping starts and then
// with the count every few seconds (kind notifications_dropped).
type NotificationsDropped struct {
	Dropped int // since the last report
	Rate    int // a second, sustained
}

// Kind is notifications_dropped.
func (NotificationsDropped) Kind() events.Kind { return events.KindNotificationsDropped }

// Fields renders dropped and rate.
func (p NotificationsDropped) Fields() events.Fields {
	return events.Fields{"dropped": p.Dropped, "rate": p.Rate}
}

// Asked is published when what a server asked the host or a client has
// been answered, or could not be (kinds elicitation, sampling, roots).
type Asked struct {
	Of events.Kind // KindElicitation, KindSampling or KindRoots
	// Elicitation: the form's mode and message, and the answer's action.
	Mode, Message, Action string
	Model                 string // sampling: the model that answered
	Roots                 int    // roots: how many were given
	// AnsweredBy is who answered (a client's label, a Lua handler, the
	// REPL); Client the gateway client, when one did.
	AnsweredBy, Client string
	// ClientsNotAsked counts the clients with calls in flight that could
	// not be told the question was theirs.
	ClientsNotAsked int
	Error           string // what the server was told, when not answered
}

// Kind is elicitation, sampling or roots.
func (p Asked) Kind() events.Kind { return p.Of }

// Fields renders what the kind has (mode, message and action; model;
// roots), then answered_by, client, clients_not_asked and error when set.
func (p Asked) Fields() events.Fields {
	f := events.Fields{}
	switch p.Of {
	case events.KindElicitation:
		f["mode"], f["message"] = p.Mode, p.Message
		if p.Action != "" {
			f["action"] = p.Action
		}
	case events.KindSampling:
		if p.Model != "" {
			f["model"] = p.Model
		}
	case events.KindRoots:
		f["roots"] = p.Roots
	}
	if p.AnsweredBy != "" {
		f["answered_by"] = p.AnsweredBy
	}
	if p.Client != "" {
		f["client"] = p.Client
	}
	if p.ClientsNotAsked > 0 {
		f["clients_not_asked"] = p.ClientsNotAsked
	}
	if p.Error != "" {
		f["error"] = p.Error
	}
	return f
}
