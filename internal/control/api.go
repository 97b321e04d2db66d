package control

import "time"

// Snapshot is what `mcpvisor status` shows of an instance.
type Snapshot struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Version string    `json:"version"`
	// Config is the startup.lua the instance runs ("" for the built-in
	// default).
	Config string `json:"config,omitempty"`
	// HTTP is the gateway's listening address, when it listens.
	HTTP    string      `json:"http,omitempty"`
	Servers []ServerRow `json:"servers"`
	Clients []ClientRow `json:"clients"`
}

// ServerRow is one server of a [Snapshot].
type ServerRow struct {
	Name      string `json:"name"`
	State     string `json:"state"`
	Transport string `json:"transport"`
	// Protocol is the protocol version negotiated with the server, if
	// it has been connected.
	Protocol  string `json:"protocol,omitempty"`
	Tools     int    `json:"tools"`
	Resources int    `json:"resources"`
	Prompts   int    `json:"prompts"`
	// Sessions counts the per-client sessions open on the server.
	Sessions  int    `json:"sessions,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// NextAttempt is when a server that is down is tried again.
	NextAttempt time.Time `json:"next_attempt,omitzero"`
}

// ClientRow is one MCP client connected to the gateway.
type ClientRow struct {
	Name      string    `json:"name"`
	Version   string    `json:"version,omitempty"`
	Transport string    `json:"transport"`
	Endpoint  string    `json:"endpoint"`
	Since     time.Time `json:"since"`
}

// Action is what a shell may ask of a server.
type Action string

const (
	Reconnect Action = "reconnect"
	Enable    Action = "enable"
	Disable   Action = "disable"
)

// Actions lists the actions, for help and errors.
var Actions = []Action{Reconnect, Enable, Disable}

// Backend is the running instance a [Server] answers for.
type Backend interface {
	Snapshot() Snapshot
	// Act does action to the server name; an error names what went wrong
	// in words for the person at the shell.
	Act(name string, action Action) error
}
