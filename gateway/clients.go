package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	Toolset   string // the toolset of a toolset's endpoint, else ""
	Since     time.Time
	// Mode is how the client is offered its tools, "" until it first
	// lists them; InFlight is how many of its calls are in flight
	// upstream. Both are as of Gateway.Clients.
	Mode     Mode
	InFlight int
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
	table  *clientTable // the gateway's sessions, this one among them
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

	// maxCalls bounds calls; 0: no bound.
	maxCalls int
	// mode is how the client is offered its tools, chosen once (modeOf),
	// which writes it under mu, for list to read.
	modeOnce sync.Once
	mode     Mode
	// logging is set once the client has set a logging level: its calls
	// then carry their server's log messages (see relayLogs).
	logging atomic.Bool
	// sessionless marks the session of one request of the sessionless
	// protocol generation, never announced, and the holder of such
	// clients' calls (see clientTable.holder), which has no ss.
	sessionless bool
	from        string    // a sessionless request's sender (see sender)
	key         holderKey // a holder's, in clientTable.holders

	mu sync.Mutex
	// mu guards the following.
	listed    bool // client_connected was published
	calls     int  // calls in flight upstream
	pins      int  // a holder's requests about to count on it (clientTable.holder)
	ended     bool
	draining  bool                  // the gateway is shutting down: no new calls
	idle      chan struct{}         // closed once ended or draining with no call in flight
	trips     map[string]*roundTrip // calls waiting on this client's answers, by request state
	tripsSeen int                   // round trips so far, to order them
	subs      map[subKey]bool       // resource subscriptions held upstream
	levelHeld func()                // lets go of the logging level held upstream (holdLevel)
	level     string                // the logging level the client set last (holdLevel)
	// reporters relay the client's progress on requests it was sent, by
	// the token the gateway gave them (see relayProgress).
	reporters   map[string]ask.Reporter
	reportsSeen int
	// fast are the client's calls on the fast path, by request id (see
	// fastKey), for its notifications/cancelled: each cancels its call
	// and reports whether it did (see cancelFast).
	fast map[string]func(cause error) bool
	// fastEnds end the client's fast calls when its session ends (see
	// endFast), by the number trackFast gave each; fastSeen counts them.
	fastEnds map[uint64]context.CancelCauseFunc
	fastSeen uint64
	// asked are the questions sent on the client's fast calls' responses,
	// waiting for its answer, by request id (see fastKey and askFast).
	asked     map[string]chan fastAnswer
	askedSeen int
	// posts counts the client's HTTP requests being served (streamable
	// HTTP); quiet are closed when it drops to zero.
	posts int
	quiet []chan struct{}
	// expire closes an HTTP session idle for expiry when the gateway
	// times sessions out itself (Gateway.sessionTimeout); nil otherwise.
	// It runs while no request of the session is being served.
	expire *time.Timer
	expiry time.Duration
}

// serving counts one of the client's HTTP requests until the function it
// returns is called.
func (s *session) serving() func() {
	s.mu.Lock()
	if s.posts++; s.posts == 1 && s.expire != nil {
		s.expire.Stop()
	}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.posts--; s.posts == 0 {
			if s.expire != nil && !s.ended {
				s.expire.Reset(s.expiry)
			}
			for _, ch := range s.quiet {
				close(ch)
			}
			s.quiet = nil
		}
	}
}

// served is closed once none of the client's HTTP requests is being
// served.
func (s *session) served() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	if s.posts == 0 {
		close(ch)
	} else {
		s.quiet = append(s.quiet, ch)
	}
	return ch
}

// errClientGone ends what a client had in flight when its session ends.
var errClientGone = errors.New("the client went away")

// begin counts a call in flight. It is refused once the session ended,
// while the gateway shuts down, and when the client already has as many
// in flight as it may.
func (s *session) begin() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ended:
		return errClientGone
	case s.draining:
		return ErrShuttingDown
	case s.maxCalls > 0 && s.calls >= s.maxCalls:
		return &LimitError{Limit: CallLimit, Max: s.maxCalls}
	}
	s.calls++
	return nil
}

// done ends a call begun. A request handler calls it once the request's
// answer has gone out, which the go-sdk marks by ending the request's
// context after the handler returned (context.AfterFunc, registered as
// the handler returns): a shutdown that waits for the session's calls and
// then closes it never closes it before an answer is written, which
// closing would refuse.
func (s *session) done() {
	s.mu.Lock()
	s.calls--
	s.closeIfIdleLocked()
	s.mu.Unlock()
	s.table.dropIfIdle(s)
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

// hold counts a request of a call already begun (a round trip's) until
// done, unless the session ended: a shutdown waits for its answer too.
func (s *session) hold() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.calls++
	return true
}

// drain refuses new calls from now on; the channel it returns is closed
// once none is in flight.
func (s *session) drain() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	s.closeIfIdleLocked()
	return s.idle
}

func (s *session) closeIfIdleLocked() {
	if (s.ended || s.draining) && s.calls == 0 {
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
	byID      map[string]*session         // HTTP sessions, by MCP session id
	reserved  map[*mcp.ServerSession]bool // initializing: counted, not yet recorded
	stdio     map[*mcp.ServerSession]bool // sessions ServeStdio serves
	stdioSeen int                         // stdio sessions so far, to number them
	draining  bool                        // the gateway is shutting down
	holders   map[holderKey]*session      // the calls of sessionless clients
}

func (t *clientTable) init(g *Gateway) {
	t.g = g
	t.bySession = map[*mcp.ServerSession]*session{}
	t.byID = map[string]*session{}
	t.reserved = map[*mcp.ServerSession]bool{}
	t.stdio = map[*mcp.ServerSession]bool{}
	t.holders = map[holderKey]*session{}
}

// reserve counts a session that is initializing among the open ones, or
// refuses it: at the cap on sessions (one open session is never closed
// to make room), or while the gateway shuts down.
func (t *clientTable) reserve(ss *mcp.ServerSession) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.bySession[ss]; ok || t.reserved[ss] {
		return nil // initialized again: already counted
	}
	if t.draining {
		return ErrShuttingDown
	}
	if max := t.g.opts.MaxSessions; len(t.bySession)+len(t.reserved) >= max {
		return &LimitError{Limit: SessionLimit, Max: max}
	}
	t.reserved[ss] = true
	return nil
}

// unreserve gives back the place of a session whose initialize failed.
func (t *clientTable) unreserve(ss *mcp.ServerSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.reserved, ss)
}

// byMCPID is the HTTP session with MCP session id id, or nil.
func (t *clientTable) byMCPID(id string) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// drain refuses new sessions and every session's new calls from now on,
// and returns the sessions, the holders of sessionless calls among them.
func (t *clientTable) drain() []*session {
	t.mu.Lock()
	t.draining = true
	sessions := slices.Collect(maps.Values(t.bySession))
	sessions = slices.AppendSeq(sessions, maps.Values(t.holders))
	t.mu.Unlock()
	return sessions
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

// known is the record of ss, or nil if the gateway has none (yet).
func (t *clientTable) known(ss *mcp.ServerSession) *session {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bySession[ss]
}

// session returns the record of ss, making it (and its watcher) the first
// time ss is seen, on endpoint ep.
func (t *clientTable) session(ep *endpoint, ss *mcp.ServerSession) *session {
	return t.record(ep, ss, "")
}

// record is session, marking a record it makes as sessionless when from
// is not "": from is then who sent the request (see sender).
func (t *clientTable) record(ep *endpoint, ss *mcp.ServerSession, from string) *session {
	sessionless := from != ""
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.bySession[ss]; ok {
		return s
	}
	c := Client{ID: publicID(ss.ID()), Transport: "http", Endpoint: ep.path, Since: time.Now()}
	if ep.sel == oneToolset {
		c.Toolset = ep.name
	}
	if c.ID == "" { // stdio, SSE and sessionless sessions have none
		if sessionless {
			c.ID = rand.Text()[:16]
		} else if t.stdio[ss] {
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
	s := &session{ss: ss, table: t, client: c, label: c.Label(), budget: t.g.budgetFor(c.Name), idle: make(chan struct{}), trips: map[string]*roundTrip{}, subs: map[subKey]bool{},
		maxCalls: t.g.opts.MaxClientCalls, draining: t.draining, sessionless: sessionless, from: from}
	s.start()
	if d := time.Duration(t.g.sessionTimeout.Load()); d > 0 && c.Transport == "http" && !sessionless {
		s.expiry = d
		s.expire = time.AfterFunc(d, func() { _ = ss.Close() })
	}
	s.closeIfIdleLocked() // no call in flight: drained already, if draining
	t.bySession[ss] = s
	delete(t.reserved, ss)
	if id := ss.ID(); id != "" {
		t.byID[id] = s
	}
	t.wg.Add(1)
	go t.watch(s)
	return s
}

// start makes the session's context, whose end ends its calls.
func (s *session) start() {
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	context.AfterFunc(s.ctx, s.endFast)
}

// watch waits for a session to end, then lets its calls return, tells
// the source that the client is gone and publishes client_disconnected.
func (t *clientTable) watch(s *session) {
	defer t.wg.Done()
	_ = s.ss.Wait()
	s.end()
	if s.expire != nil {
		s.expire.Stop()
	}
	t.dropSubscriptions(s)
	s.releaseLevel()
	t.mu.Lock()
	delete(t.bySession, s.ss)
	if t.byID[s.ss.ID()] == s {
		delete(t.byID, s.ss.ID())
	}
	t.mu.Unlock()
	s.mu.Lock()
	listed := s.listed
	s.mu.Unlock()
	if listed {
		c := s.client
		t.g.bus.Emit("", "", ClientDisconnected{Client: s.label, Name: c.Name, Transport: c.Transport, Endpoint: c.Endpoint})
	}
	t.g.src.ReleaseClient(s.label)
}

// connected lists a session's client, once, with client_connected. The
// session of one sessionless request is not a client of its own: it is
// never listed.
func (t *clientTable) connected(ep *endpoint, ss *mcp.ServerSession) {
	s := t.session(ep, ss)
	if s.sessionless {
		return
	}
	s.mu.Lock()
	already := s.listed
	s.listed = true
	s.mu.Unlock()
	if already {
		return // initialized twice: once is enough
	}
	c := s.client
	t.g.bus.Emit("", "", ClientConnected{Client: s.label, Name: c.Name, Version: c.Version, Transport: c.Transport, Endpoint: c.Endpoint})
}

// announce lists a client that never sends initialize: one of the newer
// protocol says who it is on its requests (server/discover first), and the
// SDK keeps that as the session's initialize parameters. The
// InitializedHandler lists the others, once they have sent initialized.
func (ep *endpoint) announce(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && method == "initialize" {
			return ep.initialize(ctx, next, req, ss)
		}
		res, err := next(ctx, method, req)
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok && err == nil && ss.InitializeParams() != nil && !ep.g.clients.listed(ss) {
			ep.g.clients.connected(ep, ss)
		}
		return res, err
	}
}

// initialize admits a session, or refuses it at the cap on sessions or
// while the gateway shuts down. An admitted session is recorded (and
// counted) from then on, until it ends.
func (ep *endpoint) initialize(ctx context.Context, next mcp.MethodHandler, req mcp.Request, ss *mcp.ServerSession) (mcp.Result, error) {
	if err := ep.g.clients.reserve(ss); err != nil {
		return nil, refused(err)
	}
	res, err := next(ctx, "initialize", req)
	if err != nil || ss.InitializeParams() == nil {
		ep.g.clients.unreserve(ss)
		return res, err
	}
	ep.g.clients.session(ep, ss)
	return res, nil
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
			c := s.client
			c.Mode, c.InFlight = s.mode, s.calls
			out = append(out, c)
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Client) int { return a.Since.Compare(b.Since) })
	return out
}

func (t *clientTable) wait() { t.wg.Wait() }

// count is how many clients the gateway serves now: its client sessions
// (announced or not, initializing ones included), where a sessionless
// client counts, by its holder, while it has calls in flight, and not by
// the sessions of its requests.
func (t *clientTable) count() int {
	t.mu.Lock()
	n := len(t.reserved)
	for _, s := range t.bySession {
		if !s.sessionless {
			n++
		}
	}
	holders := slices.Collect(maps.Values(t.holders))
	t.mu.Unlock()
	for _, h := range holders {
		h.mu.Lock()
		if h.calls > 0 {
			n++
		}
		h.mu.Unlock()
	}
	return n
}

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
