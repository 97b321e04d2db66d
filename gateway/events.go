package gateway

import "github.com/mcpvisor/mcpvisor/events"

// ClientConnected is published when a gateway client has initialized
// (kind client_connected); ClientDisconnected when its session ends
// (kind client_disconnected).
type ClientConnected struct {
	// Client is the client's label: its name, version and session id.
	Client              string
	Name, Version       string // as the client says
	Transport, Endpoint string
}

// Kind is client_connected.
func (ClientConnected) Kind() events.Kind { return events.KindClientConnected }

// Fields renders client, client_name, client_version, transport and
// endpoint.
func (p ClientConnected) Fields() events.Fields {
	return events.Fields{"client": p.Client, "client_name": p.Name, "client_version": p.Version,
		"transport": p.Transport, "endpoint": p.Endpoint}
}

// ClientDisconnected is published when a gateway client's session ends
// (kind client_disconnected).
type ClientDisconnected struct {
	Client, Name        string
	Transport, Endpoint string
}

// Kind is client_disconnected.
func (ClientDisconnected) Kind() events.Kind { return events.KindClientDisconnected }

// Fields renders client, client_name, transport and endpoint.
func (p ClientDisconnected) Fields() events.Fields {
	return events.Fields{"client": p.Client, "client_name": p.Name, "transport": p.Transport, "endpoint": p.Endpoint}
}

// NameCollision is published when two tools would be exposed under one
// name and the later one was given another (kind name_collision).
type NameCollision struct {
	Tool    string // the server's own name of the tool renamed
	Exposed string // the name it was given
	With    string // server.tool of the one that kept the name
	Wanted  string // the name both wanted
}

// Kind is name_collision.
func (NameCollision) Kind() events.Kind { return events.KindNameCollision }

// Fields renders tool, exposed, with and wanted.
func (p NameCollision) Fields() events.Fields {
	return events.Fields{"tool": p.Tool, "exposed": p.Exposed, "with": p.With, "wanted": p.Wanted}
}
