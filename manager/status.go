package manager

import (
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager/internal/retry"
)

// Status is one server's observable state at one moment. Each change
// publishes a new Status as a whole (atomic swap, and an event); a Status is
// never modified after it is published, so no observer sees a half-updated
// one.
type Status struct {
	Name      string
	Transport Transport
	Endpoint  string // command line or URL without credentials
	State     State
	// Attempts counts the consecutive failed connection attempts that led
	// to the current state; it is zero while connected.
	Attempts int
	// LastError is why the last attempt or session failed; cleared when a
	// connection succeeds. It says what happened, not what to do: that is
	// Remedy.
	LastError string
	// Remedy, while the server is down (backoff, open, failed,
	// unauthorized, disabled), is what brings it back; zero otherwise.
	Remedy Remedy
	// Since is when State was entered.
	Since time.Time
	// ConnectedAt is when the current session came up (zero if none).
	ConnectedAt time.Time
	// NextAttempt is when the next attempt starts: in backoff, or the
	// breaker's probe while the circuit is open.
	NextAttempt time.Time
	// Tools is how many tools the server offers (the last known set while
	// it is not connected).
	Tools        int
	Resources    int // resources and resource templates
	Prompts      int
	DiscoveredAt time.Time
	// CacheTTL is how long the server said its lists may be cached, from
	// its latest list of each kind; zero where it gave no hint.
	CacheTTL CacheTTL
	// ServerName and ServerVersion are what the server reported.
	ServerName    string
	ServerVersion string
	// Protocol is the negotiated MCP protocol version.
	Protocol string
	// Instructions and Capabilities are what the server declared at its
	// last handshake (nil capabilities before the first); shared, never
	// modified.
	Instructions string
	Capabilities *mcp.ServerCapabilities
	// PID is the process id of a stdio server while it runs.
	PID int
	// Circuit is the breaker's state.
	Circuit Circuit
	// Healthy is true while connected and the last ping (if any) was
	// answered in time.
	Healthy bool
	// LastPing is the latency of the last answered ping (zero if none yet).
	LastPing time.Duration
	// PingUnsupported is true when the server answered the health check
	// with -32601 (ping, or server/discover when HealthByDiscover); no
	// more checks are sent, and its liveness is judged from the session
	// and request errors.
	PingUnsupported bool
	// HealthByDiscover is true when the health check sends server/discover
	// in ping's place, on a session on 2026-07-28 (where ping is gone);
	// Healthy and LastPing are then its outcome.
	HealthByDiscover bool
	// WaitingFor, while connecting, is what the attempt waits for before
	// it can start: a connection slot or a turn among the attempts in
	// flight; WaitNone otherwise.
	WaitingFor WaitReason
	// Waiting says WaitingFor in words, with the cap: "max connections
	// (N) reached" ([Options.MaxConnections]), "max connecting (N)
	// reached" ([Options.MaxConnecting]); "" when not waiting.
	Waiting string
	// Sessions are the clients' sessions of a per-client server, by
	// client; the fields above describe its own session.
	Sessions []ClientSession
}

// snapshot is a supervisor's published view: its status and what a caller
// needs to use the server. It is immutable once published.
type snapshot struct {
	status  Status
	session *mcp.ClientSession // non-nil exactly when status.State is connected
	conn    *conn              // the connection under session
	cat     *catalog           // last discovered tools, resources, prompts; nil before the first
	// reconnecting is true in the backoff that follows the loss of a
	// session: the server was up a moment ago, so a caller that would
	// rather fail fast still waits for this attempt.
	reconnecting bool
	// stopped is the terminal outcome (ErrUnauthorized, ErrCannotStart)
	// that keeps the server unauthorized or failed; nil otherwise, and
	// when it gave up after its retries.
	stopped error
	// reconnects is how many Reconnects the session's attempt served, or
	// the attempt that stopped retrying: one made later replaces it (see
	// supervisor.stale).
	reconnects uint64
}

// setCatalog records what a discovery found.
func (st *Status) setCatalog(c *catalog) {
	st.Tools = len(c.tools)
	st.Resources = len(c.resources) + len(c.templates)
	st.Prompts = len(c.prompts)
	st.DiscoveredAt = c.at
	st.CacheTTL = c.ttl
}

// CacheTTL is the time to live a server gave its lists, by kind (the
// ttlMs of protocol 2026-07-28); zero is no hint. Where a list came in
// pages, it is the smallest of theirs.
type CacheTTL struct {
	Tools, Resources, Templates, Prompts time.Duration
}

// usable reports whether a call would be served without waiting out a
// failure: the server is connected, or idle (the call reconnects it).
func (st *Status) usable() bool {
	return st.State == StateConnected || st.State == StateIdle
}

// State is where a server is in its connection lifecycle; docs/design.md
// lists the states and the transitions between them.
type State int

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

// The lifecycle states. The zero value is StateConnecting: a server that was
// just added and whose supervisor has not reported yet is about to connect.
const (
	StateConnecting   State = iota // an attempt is in progress
	StateConnected                 // a session is up
	StateBackoff                   // waiting before the next attempt
	StateOpen                      // circuit open: no attempts until the probe
	StateFailed                    // retries exhausted; terminal until reconnect
	StateIdle                      // closed for inactivity; reconnects on demand
	StateDisabled                  // declared with enabled = false
	StateClosing                   // being removed or replaced
	StateRemoved                   // gone; terminal
	StateUnauthorized              // the server answered 401; waits for credentials and a reconnect
)

var stateNames = [...]string{
	StateConnecting:   "connecting",
	StateConnected:    "connected",
	StateBackoff:      "backoff",
	StateOpen:         "open",
	StateFailed:       "failed",
	StateIdle:         "idle",
	StateDisabled:     "disabled",
	StateClosing:      "closing",
	StateRemoved:      "removed",
	StateUnauthorized: "unauthorized",
}

// WaitReason is what a connection attempt waits for before it can start.
type WaitReason int

// The reasons an attempt waits. The zero value is WaitNone.
const (
	WaitNone WaitReason = iota // it does not wait
	// WaitSlot: [Options.MaxConnections] servers are connected or
	// connecting; one of them must close first, which may take long.
	WaitSlot
	// WaitTurn: [Options.MaxConnecting] attempts are in flight; the
	// first of them to end lets the next one start.
	WaitTurn
)

var waitNames = [...]string{WaitNone: "", WaitSlot: "slot", WaitTurn: "turn"}

func (w WaitReason) String() string {
	if w >= 0 && int(w) < len(waitNames) {
		return waitNames[w]
	}
	return fmt.Sprintf("WaitReason(%d)", int(w))
}

// words is what a server kept waiting for w says in [Status.Waiting],
// under a cap of limit.
func (w WaitReason) words(limit int) string {
	switch w {
	case WaitSlot:
		return fmt.Sprintf("max connections (%d) reached", limit)
	case WaitTurn:
		return fmt.Sprintf("max connecting (%d) reached", limit)
	}
	return ""
}

// Settled reports whether the server has had its first say, so that a
// script started now sees it as it is going to be for a while: it is
// connected (its tools listed), idle, disabled, failed or on its way out;
// an attempt has failed (it backs off, its circuit is open, or it is
// connecting again after the failure); or it waits for a connection slot,
// which may not come free for a long time. A server still making its first
// attempt, or only waiting for its turn to make it under
// [Options.MaxConnecting], has not.
func (st Status) Settled() bool {
	if st.State != StateConnecting {
		return true
	}
	return st.Attempts > 0 || st.WaitingFor == WaitSlot
}

// Circuit is the state of a server's circuit breaker: closed, open after
// too many consecutive failed attempts within a window, half open for the
// one probe attempt after OpenFor.
type Circuit int

// The breaker states. The zero value is CircuitClosed.
const (
	CircuitClosed   = Circuit(retry.Closed)   // attempts follow the backoff schedule
	CircuitOpen     = Circuit(retry.Open)     // no attempts until the probe is due
	CircuitHalfOpen = Circuit(retry.HalfOpen) // exactly one probe attempt is in progress
)

func (c Circuit) String() string { return retry.Circuit(c).String() }

// StderrLines is how many of a server's last stderr lines StderrTail
// returns.
const StderrLines = 200

// StderrTail returns the last lines (up to StderrLines) that the latest
// process of stdio server name wrote on stderr, one a line, with the
// server's secrets hidden as everywhere else it is shown. The process
// may have exited: its last words are what explain a crash. It is "" for
// a server that is not a process or has not started one yet, and for one
// that wrote nothing. It fails with CodeServerNotFound for an unknown
// server.
func (m *Manager) StderrTail(name string) (string, error) {
	s, err := m.lookup(name, "stderr")
	if err != nil {
		return "", err
	}
	p := s.stderr.Load()
	if p == nil {
		return "", nil
	}
	return p.StderrTail(StderrLines), nil
}
