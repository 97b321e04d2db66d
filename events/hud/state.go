package hud

// State is a server's lifecycle state as the HUD shows it, named as the
// manager names it (docs/configuration.md, "What happens to a server", lists them).
type State string

// The lifecycle states.
const (
	StateConnecting State = "connecting"
	StateConnected  State = "connected"
	StateBackoff    State = "backoff"
	StateOpen       State = "open" // the circuit is open: no attempts until the probe
	StateFailed     State = "failed"
	StateIdle       State = "idle"
	StateDisabled   State = "disabled"
	StateClosing    State = "closing"
	// StateUnauthorized: the server answered 401; it waits for credentials.
	StateUnauthorized State = "unauthorized"
)

// Glyph is the state's one-column symbol.
func (s State) Glyph() string {
	switch s {
	case StateConnected:
		return "●"
	case StateConnecting:
		return "◌"
	case StateBackoff:
		return "↻"
	case StateOpen:
		return "⊘"
	case StateFailed:
		return "✗"
	case StateIdle:
		return "◦"
	case StateDisabled:
		return "–"
	case StateClosing:
		return "↓"
	case StateUnauthorized:
		return "⊖"
	}
	return "?"
}

// Circuit is the state of a server's circuit breaker.
type Circuit string

// The breaker states.
const (
	CircuitClosed   Circuit = "closed"
	CircuitOpen     Circuit = "open"
	CircuitHalfOpen Circuit = "half_open"
)
