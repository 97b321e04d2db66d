package gateway

import (
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
)

// Client is one MCP client session of the gateway.
type Client struct {
	// ID is the client's MCP session id ("stdio" for the stdio client).
	ID        string
	Name      string // from initialize's clientInfo
	Version   string
	Transport string // "stdio" or "http"
	Endpoint  string // e.g. "/mcp", "/servers/git/mcp"
	Since     time.Time
}

// Label is how events and spans name the client: "name/version (id)".
func (c Client) Label() string {
	s := c.Name
	if s == "" {
		s = "client"
	}
	if c.Version != "" {
		s += "/" + c.Version
	}
	if c.ID != "" && c.ID != "stdio" {
		id := c.ID
		if len(id) > 8 {
			id = id[:8]
		}
		s += " (" + id + ")"
	}
	return s
}

// clientTable tracks the connected clients: a session joins when it has
// initialized (or, on the stdio transport under a protocol without
// initialize, with its first request) and leaves when it ends, each with
// an event.
type clientTable struct {
	g  *Gateway
	wg sync.WaitGroup // the watchers of sessions

	mu sync.Mutex
	// mu guards bySession.
	bySession map[*mcp.ServerSession]*tracked
}

type tracked struct {
	Client
	announced bool
}

func (t *clientTable) init(g *Gateway) {
	t.g = g
	t.bySession = map[*mcp.ServerSession]*tracked{}
}

// stdio records the stdio client's session before it says who it is.
func (t *clientTable) stdio(ep *endpoint, ss *mcp.ServerSession) {
	t.mu.Lock()
	if _, known := t.bySession[ss]; !known { // it may have initialized already
		t.bySession[ss] = &tracked{Client: Client{ID: "stdio", Transport: "stdio", Endpoint: ep.path, Since: time.Now()}}
	}
	t.mu.Unlock()
}

// initialized announces a session that completed the initialize handshake.
func (t *clientTable) initialized(ep *endpoint, ss *mcp.ServerSession) {
	var info *mcp.Implementation
	if p := ss.InitializeParams(); p != nil {
		info = p.ClientInfo
	}
	t.announce(ep, ss, info, true)
}

// request announces a stdio session at its first request, for clients
// that never initialize; clientInfo then comes with each request.
func (t *clientTable) request(ep *endpoint, req mcp.Request) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok {
		return
	}
	t.mu.Lock()
	c, known := t.bySession[ss]
	pending := known && !c.announced
	t.mu.Unlock()
	if !pending {
		return
	}
	var info *mcp.Implementation
	if r, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok {
		info = r.ClientInfo()
	}
	t.announce(ep, ss, info, false)
}

// announce publishes client_connected once per session (any is true for
// HTTP sessions, which are only tracked from initialize on) and watches
// for the session's end.
func (t *clientTable) announce(ep *endpoint, ss *mcp.ServerSession, info *mcp.Implementation, any bool) {
	t.mu.Lock()
	c, known := t.bySession[ss]
	switch {
	case known && c.announced:
		t.mu.Unlock()
		return
	case !known && !any:
		t.mu.Unlock()
		return
	case !known:
		c = &tracked{Client: Client{ID: ss.ID(), Transport: "http", Endpoint: ep.path, Since: time.Now()}}
		if c.ID == "" { // only a stdio session has none
			c.ID, c.Transport = "stdio", "stdio"
		}
		t.bySession[ss] = c
	}
	if info != nil {
		c.Name, c.Version = info.Name, info.Version
	}
	c.announced = true
	cl := c.Client
	t.mu.Unlock()
	t.g.bus.Publish(events.KindClientConnected, "", events.Fields{"client": cl.Label(), "client_name": cl.Name,
		"client_version": cl.Version, "transport": cl.Transport, "endpoint": cl.Endpoint})
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		_ = ss.Wait()
		t.mu.Lock()
		delete(t.bySession, ss)
		t.mu.Unlock()
		t.g.bus.Publish(events.KindClientDisconnected, "", events.Fields{"client": cl.Label(), "client_name": cl.Name,
			"transport": cl.Transport, "endpoint": cl.Endpoint})
	}()
}

// label names the client of a request for events and spans: the tracked
// session's client, else the clientInfo the request carries, else "".
func (t *clientTable) label(req mcp.Request) string {
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		t.mu.Lock()
		c, known := t.bySession[ss]
		var cl Client
		if known {
			cl = c.Client
		}
		t.mu.Unlock()
		if known && cl.Name != "" {
			return cl.Label()
		}
	}
	if r, ok := req.(interface{ ClientInfo() *mcp.Implementation }); ok {
		if info := r.ClientInfo(); info != nil {
			return Client{Name: info.Name, Version: info.Version}.Label()
		}
	}
	return ""
}

func (t *clientTable) list() []Client {
	t.mu.Lock()
	out := make([]Client, 0, len(t.bySession))
	for _, c := range t.bySession {
		if c.announced {
			out = append(out, c.Client)
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Client) int { return a.Since.Compare(b.Since) })
	return out
}

func (t *clientTable) wait() { t.wg.Wait() }

// Clients lists the connected clients, oldest first.
func (g *Gateway) Clients() []Client { return g.clients.list() }
