package gateway

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
)

// Client is one MCP client session of the gateway.
type Client struct {
	// ID is the client's MCP session id ("stdio" for the stdio client;
	// one made up here for an SSE client, whose transport has none).
	ID        string
	Name      string // from initialize's clientInfo
	Version   string
	Transport string // "stdio", "http" or "sse"
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
// initialized and leaves when it ends, each with an event.
type clientTable struct {
	g  *Gateway
	wg sync.WaitGroup // the watchers of sessions

	mu sync.Mutex
	// mu guards bySession and stdio.
	bySession map[*mcp.ServerSession]Client
	stdio     map[*mcp.ServerSession]bool // sessions ServeStdio serves
}

func (t *clientTable) init(g *Gateway) {
	t.g = g
	t.bySession = map[*mcp.ServerSession]Client{}
	t.stdio = map[*mcp.ServerSession]bool{}
}

// serveStdio marks ss as the stdio session, until done is called.
func (t *clientTable) serveStdio(ss *mcp.ServerSession) (done func()) {
	t.mu.Lock()
	t.stdio[ss] = true
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.stdio, ss)
		t.mu.Unlock()
	}
}

func (t *clientTable) connected(ep *endpoint, ss *mcp.ServerSession) {
	c := Client{ID: ss.ID(), Transport: "http", Endpoint: ep.path, Since: time.Now()}
	if c.ID == "" { // stdio and SSE sessions have none
		t.mu.Lock()
		stdio := t.stdio[ss]
		t.mu.Unlock()
		if stdio {
			c.ID, c.Transport = "stdio", "stdio"
		} else {
			c.ID, c.Transport = rand.Text()[:16], "sse"
		}
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		c.Name, c.Version = p.ClientInfo.Name, p.ClientInfo.Version
	}
	t.mu.Lock()
	_, known := t.bySession[ss]
	t.bySession[ss] = c
	t.mu.Unlock()
	if known {
		return // initialized twice: once is enough
	}
	t.g.bus.Publish(events.KindClientConnected, "", events.Fields{"client": c.Label(), "client_name": c.Name,
		"client_version": c.Version, "transport": c.Transport, "endpoint": c.Endpoint})
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		_ = ss.Wait()
		t.mu.Lock()
		delete(t.bySession, ss)
		t.mu.Unlock()
		t.g.bus.Publish(events.KindClientDisconnected, "", events.Fields{"client": c.Label(), "client_name": c.Name,
			"transport": c.Transport, "endpoint": c.Endpoint})
	}()
}

// announce lists a client that never sends initialize: one of the newer
// protocol says who it is on its requests (server/discover first), and the
// SDK keeps that as the session's initialize parameters. The
// InitializedHandler lists the others, once they have sent initialized.
func (ep *endpoint) announce(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == "initialize" {
			return res, err
		}
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && err == nil && ss.InitializeParams() != nil && !ep.g.clients.known(ss) {
			ep.g.clients.connected(ep, ss)
		}
		return res, err
	}
}

func (t *clientTable) known(ss *mcp.ServerSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.bySession[ss]
	return ok
}

// label names the client of a session for events, or "" if unknown.
func (t *clientTable) label(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	t.mu.Lock()
	c, ok := t.bySession[ss]
	t.mu.Unlock()
	if !ok {
		return fmt.Sprintf("client (%s)", ss.ID())
	}
	return c.Label()
}

func (t *clientTable) list() []Client {
	t.mu.Lock()
	out := make([]Client, 0, len(t.bySession))
	for _, c := range t.bySession {
		out = append(out, c)
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Client) int { return a.Since.Compare(b.Since) })
	return out
}

func (t *clientTable) wait() { t.wg.Wait() }

// Clients lists the connected clients, oldest first.
func (g *Gateway) Clients() []Client { return g.clients.list() }
