package manager

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
)

// A server declared session = "per_client" keeps one session of its own
// (the home session: it discovers the server's tools and serves the host's
// own calls, from Lua) and opens one more per client that calls it
// (CallOptions.Client), at most MaxSessions. Each client's session is run
// by a supervisor of its own, the same code as every server's, so it has
// the whole lifecycle: backoff, breaker, health, idle, disposal, events.
// Its events carry the client ("client" field); it is never in the
// manager's table of servers. It ends when its client is released
// (Manager.ReleaseClient), when it idles out, or with its server.

// clientSessions is the table of a per-client server's client sessions.
type clientSessions struct {
	home *supervisor
	max  int

	mu sync.Mutex
	// mu guards the following.
	byClient map[string]*supervisor
	// leaving are sessions given back (released, idle) that are still
	// closing: no call is given them, but they count toward max until
	// their process is gone.
	leaving map[*supervisor]bool
	closed  bool // the server is going: no new session
}

func newClientSessions(home *supervisor) *clientSessions {
	return &clientSessions{home: home, max: home.spec.MaxSessions, byClient: make(map[string]*supervisor), leaving: make(map[*supervisor]bool)}
}

// forClient returns client's session supervisor, starting one if the
// client has none and the limit allows. Beyond the limit it returns
// CONNECTION_LIMIT naming the limit and how many clients hold sessions.
func (t *clientSessions) forClient(client, op string) (*supervisor, error) {
	t.mu.Lock()
	if s, ok := t.byClient[client]; ok {
		t.mu.Unlock()
		return s, nil
	}
	if t.closed {
		t.mu.Unlock()
		return nil, errorf(CodeClosed, t.home.name, op, "server is being removed")
	}
	if len(t.byClient)+len(t.leaving) >= t.max {
		closing := len(t.leaving)
		t.mu.Unlock()
		// The holders are counted, never named: the text reaches the
		// client refused, and another client's name is not its business
		// (a name is chosen by its client, and may say anything).
		held := fmt.Sprintf("all %d client sessions (max_sessions = %d) are held by other clients", t.max, t.max)
		if t.max == 1 {
			held = "its one client session (max_sessions = 1) is held by another client"
		}
		if closing > 0 {
			held += fmt.Sprintf(", %d of them closing", closing)
		}
		return nil, errorf(CodeConnectionLimit, t.home.name, op,
			"%s; one frees when its client disconnects or idles out (timeouts.idle)", held).
			with(Remedy{Kind: RemedyRetry, Server: t.home.name})
	}
	s := newSupervisor(t.home.m, t.home.name, t.home.spec)
	s.owner, s.home = client, t.home
	t.byClient[client] = s
	n := len(t.byClient) + len(t.leaving)
	t.mu.Unlock()
	s.emit(SessionOpened{Sessions: n, MaxSessions: t.max})
	go s.run()
	return s, nil
}

// release ends client's session, if it has one; its calls in flight are
// abandoned at once (their client is gone). It does not wait.
func (t *clientSessions) release(client, reason string) {
	t.mu.Lock()
	s := t.byClient[client]
	if s != nil {
		t.leaveLocked(s)
	}
	t.mu.Unlock()
	if s != nil {
		s.inflight.Abandon(false)
		s.stop(reason)
	}
}

// leave takes s out of use: it idled out, and is closing.
func (t *clientSessions) leave(s *supervisor) {
	t.mu.Lock()
	t.leaveLocked(s)
	t.mu.Unlock()
}

func (t *clientSessions) leaveLocked(s *supervisor) {
	if t.byClient[s.owner] == s {
		delete(t.byClient, s.owner)
		t.leaving[s] = true
	}
}

// gone removes s from the table once its supervisor has finished: its
// place is free for another client.
func (t *clientSessions) gone(s *supervisor) {
	t.mu.Lock()
	if t.byClient[s.owner] == s {
		delete(t.byClient, s.owner)
	}
	delete(t.leaving, s)
	n := len(t.byClient) + len(t.leaving)
	t.mu.Unlock()
	s.m.bus.Emit(s.name, s.owner, SessionClosed{Reason: s.reason.Load().(string), Sessions: n})
}

// closeAll ends every client session for the server's own end, and waits
// for them.
func (t *clientSessions) closeAll(reason string) {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	list := t.list()
	for _, s := range list {
		s.stop(reason)
	}
	for _, s := range list {
		<-s.done
	}
}

// ClientSession is one client's session of a per-client server, as
// [Status] shows it.
type ClientSession struct {
	Client string
	State  State
	Since  time.Time
	PID    int // stdio: the session's own process
}

// list returns the client sessions' supervisors, those closing included.
func (t *clientSessions) list() []*supervisor {
	t.mu.Lock()
	defer t.mu.Unlock()
	list := make([]*supervisor, 0, len(t.byClient)+len(t.leaving))
	for _, s := range t.byClient {
		list = append(list, s)
	}
	for s := range t.leaving {
		list = append(list, s)
	}
	return list
}

// sessions lists the client sessions, by client.
func (t *clientSessions) sessions() []ClientSession {
	list := t.list()
	out := make([]ClientSession, 0, len(list))
	for _, s := range list {
		st := s.snap.Load().status
		out = append(out, ClientSession{Client: s.owner, State: st.State, Since: st.Since, PID: st.PID})
	}
	slices.SortFunc(out, func(a, b ClientSession) int { return strings.Compare(a.Client, b.Client) })
	return out
}

// ReleaseClient ends the sessions client holds on per-client servers
// (stopping their processes), freeing their places: the gateway calls it
// when one of its clients goes away. Calls of that client still in flight
// are abandoned.
func (m *Manager) ReleaseClient(client string) {
	if client == "" {
		return
	}
	for _, s := range m.supervisors() {
		if s.clients != nil {
			s.clients.release(client, "client left")
		}
	}
}

// emit publishes one of the server's events. A client session's events
// carry its client; its start and end are session_opened and
// session_closed (published by its table), not added or removed, which
// are the server's.
func (s *supervisor) emit(p events.Payload) {
	if s.owner != "" {
		switch p.(type) {
		case Closing, Removed:
			return
		}
	}
	s.m.bus.Emit(s.name, s.owner, s.hidePayload(p))
}

// target is the supervisor whose session serves a call from client: the
// client's own session on a per-client server, else s.
func (s *supervisor) target(client, op string) (*supervisor, error) {
	if s.clients == nil || client == "" {
		return s, nil
	}
	return s.clients.forClient(client, op)
}
