package events

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kind names what happened: one kind per lifecycle step, discovery change,
// server notification, config load, hook failure and lag notice, plus
// closing and disabled (so every state change has its event),
// health_unsupported and tool_call.
type Kind string

// The event kinds. Fields each kind carries are listed beside it.
const (
	KindAdded                Kind = "added"                 // transport, endpoint; enabled = false if declared disabled
	KindRemoved              Kind = "removed"               // reason
	KindConnecting           Kind = "connecting"            // attempt
	KindConnected            Kind = "connected"             // attempt, tools, protocol, server_name, server_version, pid
	KindDisconnected         Kind = "disconnected"          // error
	KindBackoff              Kind = "backoff"               // attempt, delay_ms, error
	KindFailed               Kind = "failed"                // attempts, error
	KindUnauthorized         Kind = "unauthorized"          // challenge, error: the server answered 401
	KindCircuit              Kind = "circuit"               // from, to, failures, probe_in_ms (to open), error
	KindHealthFailed         Kind = "health_failed"         // error
	KindHealthUnsupported    Kind = "health_unsupported"    // error: the health check (ping, or server/discover on 2026-07-28) answered -32601, liveness is passive
	KindIdle                 Kind = "idle"                  // idle_ms, or reason
	KindClosing              Kind = "closing"               // reason
	KindDisabled             Kind = "disabled"              //
	KindToolCall             Kind = "tool_call"             // tool, duration_ms, is_error; code, error on failure; cancelled when the caller gave up (a call that went well only when a subscriber asks: Bus.Wants)
	KindSessionReinitialized Kind = "session_reinitialized" //
	KindToolsChanged         Kind = "tools_changed"         // added, removed
	KindResourcesChanged     Kind = "resources_changed"     // added, removed
	KindPromptsChanged       Kind = "prompts_changed"       // added, removed
	KindNotification         Kind = "notification"          // method, params: what a server said, handed to hooks from the manager's notices, not published on the bus
	KindConfigApplied        Kind = "config_applied"        // file, added, removed, replaced
	KindConfigError          Kind = "config_error"          // file, error
	KindHookError            Kind = "hook_error"            // hook, error
	KindLagged               Kind = "lagged"                // missed
	// Published by the gateway (package gateway), which serves the
	// servers to MCP clients.
	KindClientConnected    Kind = "client_connected"    // client, client_name, client_version, transport, endpoint
	KindClientDisconnected Kind = "client_disconnected" // client, client_name, transport, endpoint
	KindNameCollision      Kind = "name_collision"      // tool or prompt, exposed, with: two names that would have been one
	// Published by the manager when a server lists an item whose name it
	// refuses (empty, control characters, a look-alike of another).
	KindRefused Kind = "refused" // item (tool, prompt), name (quoted), reason
	// Published by the manager when a server's notifications came faster
	// than it publishes them.
	KindNotificationsDropped Kind = "notifications_dropped" // dropped, rate (a second)
	// Published by the manager when a server asks its client something,
	// once answered (or not): who answered and how, never the answer.
	KindElicitation Kind = "elicitation" // mode, message, client, answered_by, action; error
	KindSampling    Kind = "sampling"    // client, answered_by, model; error (messages at DEBUG only)
	KindRoots       Kind = "roots"       // client, answered_by, roots (count); error
	// Published by the manager when a client of a per-client server gets
	// or gives back its session.
	KindSessionOpened Kind = "session_opened" // client, sessions, max_sessions
	KindSessionClosed Kind = "session_closed" // client, reason, sessions
)

// Kinds lists every event kind: added … lagged first, then the four added
// later (health_unsupported, closing, disabled, tool_call), then the
// gateway's.
var Kinds = []Kind{
	KindAdded, KindRemoved, KindConnecting, KindConnected, KindDisconnected,
	KindBackoff, KindFailed, KindCircuit, KindHealthFailed, KindIdle,
	KindSessionReinitialized, KindToolsChanged, KindResourcesChanged,
	KindPromptsChanged, KindNotification, KindConfigApplied, KindConfigError,
	KindHookError, KindLagged,
	KindHealthUnsupported, KindClosing, KindDisabled, KindToolCall,
	KindClientConnected, KindClientDisconnected, KindNameCollision, KindRefused,
	KindNotificationsDropped, KindUnauthorized,
	KindElicitation, KindSampling, KindRoots, KindSessionOpened, KindSessionClosed,
}

// Fields holds the kind-specific details of an event. Values are plain,
// JSON-like data: string, bool, int, int64, uint64, float64, []string and
// map[string]any. Publishers must not modify a Fields map after publishing it.
type Fields map[string]any

// Payload is the typed detail of an event, defined by the package that
// publishes it (the manager's lifecycle: manager.Connected, manager.Backoff,
// …): a consumer reads it by type rather than by field name. Fields renders
// it as the plain data Lua hooks, the log and the history show; the bus
// calls it once, when the event is published.
type Payload interface {
	Kind() Kind
	Fields() Fields
}

// Event is one immutable fact published on the bus.
type Event struct {
	// Seq is assigned by the bus and strictly increasing. A [KindLagged]
	// notice is private to one subscriber and has Seq 0.
	Seq uint64
	// Time is when the event was published.
	Time time.Time
	Kind Kind
	// Server is the server's name, or "" for host-wide events.
	Server string
	// Client is the client whose own session of a per-client server the
	// event is about, or "" for the server's own (it is also in Fields, as
	// client).
	Client string
	// Fields are the event's details as plain data.
	Fields Fields
	// Payload is the typed detail the event was published with ([Bus.Emit]),
	// or nil for an event published as Kind and Fields alone.
	Payload Payload
}

// Int returns the integer field key, or 0.
func (e Event) Int(key string) int64 {
	switch v := e.Fields[key].(type) {
	case int:
		return int64(v)
	case int64:
		return v
	case uint64:
		return int64(v)
	case float64:
		return int64(v)
	}
	return 0
}

// Text returns the string field key, or "".
func (e Event) Text(key string) string {
	s, _ := e.Fields[key].(string)
	return s
}

// Format renders the event on one line, as the log and the REPL show it:
// `#12 git backoff attempt=3 delay_ms=400 error="…"`.
func (e Event) Format() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d", e.Seq)
	if e.Server != "" {
		b.WriteString(" " + e.Server)
	}
	b.WriteString(" " + string(e.Kind))
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := e.Fields[k].(type) {
		case string:
			fmt.Fprintf(&b, " %s=%q", k, v)
		default:
			fmt.Fprintf(&b, " %s=%v", k, v)
		}
	}
	return b.String()
}
