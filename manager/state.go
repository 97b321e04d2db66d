package manager

import (
	"fmt"
	"strings"
)

// State is where a server is in its connection lifecycle (SPEC §3).
type State int

// The lifecycle states. The zero value is StateConnecting: a server that was
// just added and whose supervisor has not reported yet is about to connect.
const (
	StateConnecting State = iota // an attempt is in progress
	StateConnected               // a session is up
	StateBackoff                 // waiting before the next attempt
	StateOpen                    // circuit open: no attempts until the probe
	StateFailed                  // retries exhausted; terminal until reconnect
	StateIdle                    // closed for inactivity; reconnects on demand
	StateDisabled                // declared with enabled = false
	StateClosing                 // being removed or replaced
	StateRemoved                 // gone; terminal
)

var stateNames = [...]string{
	StateConnecting: "connecting",
	StateConnected:  "connected",
	StateBackoff:    "backoff",
	StateOpen:       "open",
	StateFailed:     "failed",
	StateIdle:       "idle",
	StateDisabled:   "disabled",
	StateClosing:    "closing",
	StateRemoved:    "removed",
}

func (s State) String() string {
	if s >= 0 && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// ParseState returns the state named s (as State.String spells it).
func ParseState(s string) (State, error) {
	for i, n := range stateNames {
		if strings.EqualFold(n, s) {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("unknown state %q (want one of %s)", s, strings.Join(stateNames[:], ", "))
}
