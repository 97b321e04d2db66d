package manager

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Status is one server's observable state at one moment (R-LIFE-3). Each
// change publishes a new Status as a whole; a Status is never modified after
// it is published, so no observer sees a half-updated one (R-LIFE-2).
type Status struct {
	Name      string
	Transport Transport
	Endpoint  string // command line or URL without credentials
	State     State
	// Attempts counts the consecutive failed connection attempts that led
	// to the current state; it is zero while connected.
	Attempts int
	// LastError is why the last attempt or session failed; cleared when a
	// connection succeeds.
	LastError string
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
	// ServerName and ServerVersion are what the server reported.
	ServerName    string
	ServerVersion string
	// Protocol is the negotiated MCP protocol version.
	Protocol string
	// PID is the process id of a stdio server while it runs.
	PID int
	// Circuit is the breaker's state.
	Circuit Circuit
	// Healthy is true while connected and the last ping (if any) was
	// answered in time.
	Healthy bool
	// LastPing is the latency of the last answered ping (zero if none yet).
	LastPing time.Duration
	// PingUnsupported is true when the server answered ping with -32601;
	// its liveness is then judged from the session and request errors.
	PingUnsupported bool
	// Waiting, while connecting, says what the attempt waits for before it
	// can start: "max connections (N) reached" ([Options.MaxConnections]).
	Waiting string
}

// snapshot is a supervisor's published view: its status and what a caller
// needs to use the server. It is immutable once published.
type snapshot struct {
	status  Status
	session *mcp.ClientSession // non-nil exactly when status.State is connected
	conn    *conn              // the connection under session
	cat     *catalog           // last discovered tools, resources, prompts; nil before the first
}

// ToolInfo describes one tool in the namespaced registry.
type ToolInfo struct {
	// FullName is Server + "." + Name, the name to call it by.
	FullName    string
	Server      string
	Name        string // as the server names it
	Title       string
	Description string
	// InputSchema is the tool's JSON schema as the server sent it.
	InputSchema any
	// Available is false while its server cannot serve a call (backoff,
	// circuit open, failed, disabled); the tool stays listed with its last
	// known shape. An idle server's tools are available: a call reconnects it.
	Available bool
}

// setCatalog records what a discovery found.
func (st *Status) setCatalog(c *catalog) {
	st.Tools = len(c.tools)
	st.Resources = len(c.resources) + len(c.templates)
	st.Prompts = len(c.prompts)
	st.DiscoveredAt = c.at
}

// usable reports whether a call would be served without waiting out a
// failure: the server is connected, or idle (the call reconnects it).
func (st *Status) usable() bool {
	return st.State == StateConnected || st.State == StateIdle
}
