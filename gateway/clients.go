package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// Client is one MCP client session of the gateway.
type Client struct {
	// ID names the session among all the gateway's: over streamable
	// HTTP a digest of the client's MCP session id (the id itself lets
	// whoever holds it act as that client, and the ID is shown to other
	// clients, in logs and in events); "stdio" for the first stdio
	// client, "stdio-2" for the next and so on; one made up here for an
	// SSE client, whose transport has none.
	ID        string
	Name      string // from initialize's clientInfo
	Version   string
	Transport string // "stdio", "http" or "sse"
	Endpoint  string // e.g. "/mcp", "/servers/git/mcp"
	Since     time.Time
}

// Label is how events, spans and the manager name the client:
// "name/version (id)". It is unique among the gateway's clients, so two
// clients of the same name and version are told apart (and get sessions
// of their own on a per-client server).
func (c Client) Label() string {
	s := c.Name
	if s == "" {
		s = "client"
	}
	if c.Version != "" {
		s += "/" + c.Version
	}
	return s + " (" + c.ID + ")"
}

// publicID stands for an MCP session id where others may read it: 16
// base32 characters of its SHA-256 (80 bits, so two sessions never share
// one in practice), "" for "".
func publicID(sessionID string) string {
	if sessionID == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(sessionID))
	return base32.StdEncoding.EncodeToString(sum[:10])
}

// session is what the gateway keeps of one client session, from the
// first time it sees it (initialized, or a first call) until it ends.
type session struct {
	ss     *mcp.ServerSession
	client Client
	// label is client.Label(), fixed when the session is first seen: the
	// Client of every call it makes and what ReleaseClient is given.
	label string
	// budget is the longest name the client is offered, fixed when the
	// session is first seen (see SetClientBudgets).
	budget int
	// ctx ends when the session does, and with it every call the session
	// still has upstream.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu sync.Mutex
	// mu guards the following.
	listed    bool // client_connected was published
	calls     int  // calls in flight upstream
	ended     bool
	idle      chan struct{}         // closed once ended with no call in flight
	trips     map[string]*roundTrip // calls waiting on this client's answers, by request state
	tripsSeen int                   // round trips so far, to order them
	subs      map[subKey]bool       // resource subscriptions held upstream
	// reporters relay the client's progress on requests it was sent, by
	// the token the gateway gave them (see relayProgress).
	reporters   map[string]ask.Reporter
	reportsSeen int
}

// errClientGone ends what a client had in flight when its session ends.
var errClientGone = errors.New("the client went away")

// begin counts a call in flight; it is refused once the session ended.
func (s *session) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.calls++
	return true
}

// done ends a call begun.
func (s *session) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls--
	s.closeIfIdleLocked()
}

// end cancels what the session has in flight and waits for its calls to
// return.
func (s *session) end() {
	s.cancel(errClientGone)
	s.mu.Lock()
	s.ended = true
	s.trips = nil
	s.closeIfIdleLocked()
	s.mu.Unlock()
	<-s.idle
}

func (s *session) closeIfIdleLocked() {
	if s.ended && s.calls == 0 {
		select {
		case <-s.idle:
		default:
			close(s.idle)
		}
	}
}

// clientTable tracks the client sessions: one joins when it has
// initialized (or first calls, if that comes first) and leaves when it
// ends; it is announced with events, and the manager is told when it
// leaves.
type clientTable struct {
	g  *Gateway
	wg sync.WaitGroup // the watchers of sessions

	mu sync.Mutex
	// mu guards the following.
	bySession map[*mcp.ServerSession]*session
	stdio     map[*mcp.ServerSession]bool // sessions ServeStdio serves
	stdioSeen int                         // stdio sessions so far, to number them
}

func (t *clientTable) init(g *Gateway) {
	t.g = g
	t.bySession = map[*mcp.ServerSession]*session{}
	t.stdio = map[*mcp.ServerSession]bool{}
}

// serveStdio marks ss as a stdio session, until done is called.
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

// session returns the record of ss, making it (and its watcher) the first
// time ss is seen, on endpoint ep.
func (t *clientTable) session(ep *endpoint, ss *mcp.ServerSession) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.bySession[ss]; ok {
		return s
	}
	c := Client{ID: publicID(ss.ID()), Transport: "http", Endpoint: ep.path, Since: time.Now()}
	if c.ID == "" { // stdio and SSE sessions have none
		if t.stdio[ss] {
			t.stdioSeen++
			c.ID, c.Transport = "stdio", "stdio"
			if t.stdioSeen > 1 {
				c.ID = fmt.Sprintf("stdio-%d", t.stdioSeen)
			}
		} else {
			c.ID, c.Transport = rand.Text()[:16], "sse"
		}
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		c.Name, c.Version = p.ClientInfo.Name, p.ClientInfo.Version
	}
	s := &session{ss: ss, client: c, label: c.Label(), budget: t.g.budgetFor(c.Name), idle: make(chan struct{}), trips: map[string]*roundTrip{}, subs: map[subKey]bool{}}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	t.bySession[ss] = s
	t.wg.Add(1)
	go t.watch(s)
	return s
}

// watch waits for a session to end, then lets its calls return, tells
// the source that the client is gone and publishes client_disconnected.
func (t *clientTable) watch(s *session) {
	defer t.wg.Done()
	_ = s.ss.Wait()
	s.end()
	t.dropSubscriptions(s)
	t.mu.Lock()
	delete(t.bySession, s.ss)
	t.mu.Unlock()
	s.mu.Lock()
	listed := s.listed
	s.mu.Unlock()
	if listed {
		c := s.client
		t.g.bus.Publish(events.KindClientDisconnected, "", events.Fields{"client": s.label, "client_name": c.Name,
			"transport": c.Transport, "endpoint": c.Endpoint})
	}
	t.g.src.ReleaseClient(s.label)
}

// connected lists a session's client, once, with client_connected.
func (t *clientTable) connected(ep *endpoint, ss *mcp.ServerSession) {
	s := t.session(ep, ss)
	s.mu.Lock()
	already := s.listed
	s.listed = true
	s.mu.Unlock()
	if already {
		return // initialized twice: once is enough
	}
	c := s.client
	t.g.bus.Publish(events.KindClientConnected, "", events.Fields{"client": s.label, "client_name": c.Name,
		"client_version": c.Version, "transport": c.Transport, "endpoint": c.Endpoint})
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
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && err == nil && ss.InitializeParams() != nil && !ep.g.clients.listed(ss) {
			ep.g.clients.connected(ep, ss)
		}
		return res, err
	}
}

// listed reports whether ss's client was announced.
func (t *clientTable) listed(ss *mcp.ServerSession) bool {
	t.mu.Lock()
	s, ok := t.bySession[ss]
	t.mu.Unlock()
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listed
}

func (t *clientTable) list() []Client {
	t.mu.Lock()
	sessions := make([]*session, 0, len(t.bySession))
	for _, s := range t.bySession {
		sessions = append(sessions, s)
	}
	t.mu.Unlock()
	var out []Client
	for _, s := range sessions {
		s.mu.Lock()
		if s.listed {
			out = append(out, s.client)
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Client) int { return a.Since.Compare(b.Since) })
	return out
}

func (t *clientTable) wait() { t.wg.Wait() }

// labelOf is the label of ss's client, or "" if the gateway has not seen it.
func (t *clientTable) labelOf(ss *mcp.ServerSession) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.bySession[ss]; ok {
		return s.label
	}
	return ""
}

// Clients lists the connected clients, oldest first.
func (g *Gateway) Clients() []Client { return g.clients.list() }
