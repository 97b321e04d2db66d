package manager

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/manager/notify"
	"github.com/mcpvisor/mcpvisor/manager/oauth"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/endpoint"
	"github.com/mcpvisor/mcpvisor/internal/suggest"
)

// Options configures a [Manager]. The zero value is ready to use.
type Options struct {
	// Bus receives every lifecycle event. If nil, the manager makes its
	// own, available from [Manager.Bus] and closed by [Manager.Close].
	Bus *events.Bus
	// Logger receives the host's own diagnostics (panics, server stderr at
	// debug). If nil, they are discarded.
	Logger *slog.Logger
	// Dial opens the transport of each connection attempt. If nil, stdio
	// servers are spawned and HTTP servers dialled per their spec.
	Dial DialFunc
	// Rand returns uniform numbers in [0, 1) for backoff and breaker
	// jitter. Every supervisor goroutine calls it, so it must be safe for
	// concurrent use (a *rand.Rand is not). If nil, math/rand/v2.
	Rand func() float64
	// StopGrace is how long a stdio server gets after stdin closes, and
	// again after SIGTERM, before its process group is killed. If zero, 2s.
	StopGrace time.Duration
	// DrainTimeout bounds how long removing or disabling a server waits
	// for its requests in flight before abandoning them (each is also
	// bounded by its own timeout). If zero, 10s.
	DrainTimeout time.Duration
	// MaxConnections caps the servers connected or connecting at once; 0
	// means no cap. A server beyond the cap waits in connecting (its status
	// and a connecting event say "max connections (N) reached") until a
	// connection closes: a failed attempt, an idle close (timeouts.idle), a
	// lost session, a disable or a removal frees its slot. Waiting servers
	// are served in order: those added together connect in the order of
	// Add. Callers waiting for one get CONNECTION_LIMIT when their own
	// timeout ends first; an idle server woken by callers goes back to
	// idle when none of them waits any more.
	MaxConnections int
	// MaxConnecting caps the connection attempts in flight at once (spawn
	// or dial, handshake and first discovery), apart from MaxConnections:
	// a config of thousands of servers starts them a few at a time instead
	// of running thousands of processes that have not answered yet. An
	// attempt beyond the cap waits in connecting (its status and a
	// connecting event say "max connecting (N) reached") until one in
	// flight connects, fails or times out; waiting attempts take their turn
	// in order, those added together in the order of Add. 0 means the
	// default, [DefaultMaxConnecting]; less than 0 means no cap.
	MaxConnecting int
	// Version is reported to servers as the client version. If empty, "dev".
	Version string
	// TracerProvider makes the tracer of the manager's spans (mcp.add,
	// mcp.connect_loop, mcp.tool_call, …; see docs/observability.md). If nil, the otel
	// global provider (otel.GetTracerProvider), which records nothing
	// unless a program sets it.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the manager's metric instruments. If nil, the
	// otel global provider (otel.GetMeterProvider).
	MeterProvider metric.MeterProvider
	// StateDir is where logins to OAuth servers are kept (in its oauth
	// directory). If empty, $XDG_STATE_HOME/mcpvisor, or
	// ~/.local/state/mcpvisor.
	StateDir string
}

// Manager keeps a set of MCP servers connected. Create it with [New]; it is
// safe for concurrent use.
type Manager struct {
	opts     Options
	bus      *events.Bus
	ownsBus  bool
	notes    *notify.Hub // what servers say, for listeners
	log      *slog.Logger
	http     *http.Transport
	auth     *oauth.Keeper // logins to OAuth servers
	dial     DialFunc
	rand     func() float64
	tel      *telemetry
	slots    *slots // nil: no cap on connections
	attempts *slots // nil: no cap on attempts in flight
	answers  answers
	streams  callStreams // the response streams of calls, by tag
	levels   logLevels   // the level servers are asked to log at

	// loginPoll is how often a server waiting for a login looks whether one
	// landed in the state directory, and loginPolled (nil: nothing) runs
	// after each look; both are fixed before any server is added.
	loginPoll   time.Duration
	loginPolled func(server string)

	mu sync.Mutex
	// mu guards the following.
	servers map[string]*supervisor // by NameKey
	// exact holds the same servers by their names as declared: most
	// lookups use that spelling and need no NameKey.
	exact map[string]*supervisor
	// leaving holds removed servers until their disposal is done, so that
	// a request for one is refused with CLOSED, not "no such server".
	leaving map[string]*supervisor // by NameKey
	closed  bool
}

// New returns a manager with no servers.
func New(opts Options) *Manager {
	m := &Manager{opts: opts, bus: opts.Bus, notes: notify.NewHub(), log: opts.Logger, dial: opts.Dial, rand: opts.Rand,
		servers: make(map[string]*supervisor), exact: make(map[string]*supervisor), leaving: make(map[string]*supervisor)}
	if m.bus == nil {
		m.bus, m.ownsBus = events.NewBus(events.Options{}), true
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.rand == nil {
		m.rand = rand.Float64
	}
	if m.opts.StopGrace <= 0 {
		m.opts.StopGrace = 2 * time.Second
	}
	if m.opts.DrainTimeout <= 0 {
		m.opts.DrainTimeout = 10 * time.Second
	}
	if m.opts.Version == "" {
		m.opts.Version = "dev"
	}
	m.slots = newSlots(m.opts.MaxConnections, WaitSlot)
	if m.opts.MaxConnecting == 0 {
		m.opts.MaxConnecting = DefaultMaxConnecting()
	}
	m.attempts = newSlots(m.opts.MaxConnecting, WaitTurn)
	m.http = endpoint.NewPool()
	m.auth = oauth.NewKeeper(oauth.KeeperOptions{Dir: opts.StateDir, Transport: m.http})
	m.loginPoll = loginPoll
	m.tel = newTelemetry(opts.TracerProvider, opts.MeterProvider, m.Statuses, m.log)
	if m.dial == nil {
		m.dial = m.defaultDial
	}
	return m
}

// Bus returns the event bus the manager publishes on.
func (m *Manager) Bus() *events.Bus { return m.bus }

// Add declares a server and returns at once, never waiting on a process, a
// socket or a handshake: its supervisor connects in the background. Adding
// a name that exists with an identical spec is a no-op; with a different
// spec it is a NAME_CONFLICT.
func (m *Manager) Add(name string, spec Spec) (err error) {
	endSpan := m.tel.add(strings.TrimSpace(name), spec)
	defer func() { endSpan(err) }()
	n, err := NormalizeName(name)
	if err != nil {
		return newError(CodeInvalidConfig, strings.TrimSpace(name), "add", err)
	}
	spec = spec.WithDefaults()
	if probs := spec.Problems(); len(probs) > 0 {
		return ConfigError(n, probs)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return newError(CodeClosed, n, "add", errShutdown)
	}
	key := NameKey(n)
	if old, ok := m.servers[key]; ok {
		m.mu.Unlock()
		if old.spec.Equal(spec) && strings.EqualFold(old.name, n) {
			return nil
		}
		return m.conflict(n, old.name)
	}
	s := newSupervisor(m, n, spec)
	if spec.Session == SessionPerClient {
		s.clients = newClientSessions(s)
	}
	if !spec.Disabled {
		s.slot = m.slots.take() // in line in the order of declaration
		if s.slot == nil || s.slot.ready() {
			// In line for its first attempt too; one still waiting for a
			// connection slot joins that line once it has one, so that it
			// holds no turn meanwhile.
			s.turn = m.attempts.take()
		}
	}
	m.servers[key] = s
	m.exact[n] = s
	m.mu.Unlock()

	m.bus.Emit(n, "", Added{Transport: spec.Transport, Endpoint: spec.Endpoint(), Disabled: spec.Disabled})
	go s.run()
	return nil
}

func (m *Manager) conflict(name, existing string) error {
	how := ""
	switch {
	case LookAlike(name, existing):
		how = fmt.Sprintf(" looks like existing %q (names are compared as people read them: width, case, accents and look-alike letters)", existing)
	case name != existing:
		how = fmt.Sprintf(" matches existing %q (names are case-insensitive)", existing)
	default:
		how = " is already declared with a different spec"
	}
	return errorf(CodeNameConflict, name, "add", "server name conflict: %q%s; existing servers: %s",
		name, how, strings.Join(m.Names(), ", ")).with(Remedy{Kind: RemedyRename, Server: existing})
}

var errShutdown = fmt.Errorf("the host is shutting down")

// Remove takes a server away and returns at once; the returned channel is
// closed when its disposal is complete: session closed, process reaped and
// the removed event published.
func (m *Manager) Remove(name string) (done <-chan struct{}, err error) {
	span := m.tel.remove(strings.TrimSpace(name))
	m.mu.Lock()
	s := m.byName(name)
	if s != nil {
		delete(m.servers, s.key)
		delete(m.exact, s.name)
		m.leaving[s.key] = s
	}
	m.mu.Unlock()
	if s == nil {
		err := m.notFound(name, "remove")
		span.fail(err)
		return nil, err
	}
	s.removeSpan.Store(span) // its supervisor ends it, last of all
	s.stop("removed")
	return s.done, nil
}

func (m *Manager) notFound(name, op string) error {
	names := m.Names()
	hint := "no servers are declared"
	if len(names) > 0 {
		hint = "known servers: " + strings.Join(names, ", ")
		if c := suggest.Closest(name, names); c != "" {
			hint = fmt.Sprintf("did you mean %q? %s", c, hint)
		}
	}
	return errorf(CodeServerNotFound, strings.TrimSpace(name), op, "no such server; %s", hint)
}

// lookup finds a server by name, case-insensitively.
func (m *Manager) lookup(name, op string) (*supervisor, error) {
	m.mu.Lock()
	s := m.byName(name)
	m.mu.Unlock()
	if s == nil {
		return nil, m.notFound(name, op)
	}
	return s, nil
}

// byName finds a declared server by its name as declared, or else by
// NameKey; m.mu must be held.
func (m *Manager) byName(name string) *supervisor {
	name = strings.TrimSpace(name)
	if s := m.exact[name]; s != nil {
		return s
	}
	return m.servers[NameKey(name)]
}

// target finds the server a request is for. A server that is being
// removed, or any once the manager is closing, refuses it with CLOSED.
func (m *Manager) target(name, op string) (*supervisor, error) {
	s, gone, closed := m.find(name)
	switch {
	case s != nil:
		return s, nil
	case gone != nil:
		return nil, errorf(CodeClosed, gone.name, op, "server is being removed")
	case closed:
		return nil, newError(CodeClosed, strings.TrimSpace(name), op, errShutdown)
	}
	return nil, m.notFound(name, op)
}

// find returns the server declared as name, or else the one of that name
// being removed, and whether the manager is closing.
func (m *Manager) find(name string) (s, gone *supervisor, closed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.byName(name); s != nil {
		return s, nil, m.closed
	}
	return nil, m.leaving[NameKey(strings.TrimSpace(name))], m.closed
}

// forget drops a disposed server from leaving (unless the name was
// removed again since, by a server added after it).
func (m *Manager) forget(s *supervisor) {
	m.mu.Lock()
	if m.leaving[s.key] == s {
		delete(m.leaving, s.key)
	}
	m.mu.Unlock()
}

// supervisors returns the current servers sorted by name.
func (m *Manager) supervisors() []*supervisor {
	m.mu.Lock()
	list := make([]*supervisor, 0, len(m.servers))
	for _, s := range m.servers {
		list = append(list, s)
	}
	m.mu.Unlock()
	slices.SortFunc(list, func(a, b *supervisor) int { return strings.Compare(a.order, b.order) })
	return list
}

// Names returns the declared servers' names, sorted.
func (m *Manager) Names() []string {
	var names []string
	for _, s := range m.supervisors() {
		names = append(names, s.name)
	}
	return names
}

// Status returns a server's current status.
func (m *Manager) Status(name string) (Status, error) {
	s, err := m.lookup(name, "status")
	if err != nil {
		return Status{}, err
	}
	return s.status(), nil
}

// Statuses returns every server's status, sorted by name.
func (m *Manager) Statuses() []Status {
	var out []Status
	for _, s := range m.supervisors() {
		out = append(out, s.status())
	}
	return out
}

// status is s's published status with, for a per-client server, its
// clients' sessions.
func (s *supervisor) status() Status {
	st := s.snap.Load().status
	if s.clients != nil {
		st.Sessions = s.clients.sessions()
	}
	return st
}

// Spec returns the spec a server was declared with (defaults applied).
func (m *Manager) Spec(name string) (Spec, error) {
	s, err := m.lookup(name, "spec")
	if err != nil {
		return Spec{}, err
	}
	return s.spec, nil
}

// Wait blocks until the server reaches state, returning its status then.
// If ctx ends first it returns the current status and an error saying what
// the state is and why.
func (m *Manager) Wait(ctx context.Context, name string, state State) (Status, error) {
	s, err := m.lookup(name, "wait")
	if err != nil {
		return Status{}, err
	}
	return m.wait(ctx, s, state, nil)
}

// wait is Wait for s; if not nil, fail ends the wait early with the error
// it gives for a status.
func (m *Manager) wait(ctx context.Context, s *supervisor, state State, fail func(*snapshot) error) (Status, error) {
	snap, ended, err := s.await(ctx, state == StateConnected, func(snap *snapshot) (bool, error) {
		if fail != nil {
			if err := fail(snap); err != nil {
				return true, err
			}
		}
		switch snap.status.State {
		case StateConnected:
			if state == StateConnected && !s.stale(snap) {
				return true, nil
			}
		case state:
			return true, nil
		case StateRemoved:
			return true, errorf(CodeClosed, s.name, "wait", "server was removed while waiting for %s", state)
		}
		return false, nil
	})
	st := snap.status
	if ended {
		still := st.State.String()
		if st.WaitingFor != WaitNone {
			still += " (waiting: " + st.Waiting + ")"
		}
		return st, errorf(CodeConnectionTimeout, s.name, "wait", "still %s, not %s%s", still, state, lastErrorSuffix(st)).with(st.Remedy)
	}
	return st, err
}

func lastErrorSuffix(st Status) string {
	if st.LastError == "" {
		return ""
	}
	return " (last error: " + st.LastError + ")"
}

// Close removes every server in parallel and waits until all are disposed
// — those removed before and still draining too — or ctx ends, shaped like
// http.Server.Shutdown. Later calls to Add fail with CLOSED.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	m.closed = true
	list := make([]*supervisor, 0, len(m.servers))
	wait := slices.Collect(maps.Values(m.leaving))
	for k, s := range m.servers {
		list = append(list, s)
		m.leaving[k] = s
	}
	clear(m.servers)
	clear(m.exact)
	m.mu.Unlock()
	for _, s := range list {
		s.stop("shutdown")
	}
	var err error
	for _, s := range append(list, wait...) {
		select {
		case <-s.done:
		case <-ctx.Done():
			err = fmt.Errorf("shutdown: server %q not disposed in time: %w", s.name, ctx.Err())
		}
		if err != nil {
			break
		}
	}
	m.http.CloseIdleConnections()
	m.tel.close()
	m.notes.Close()
	if m.ownsBus && err == nil {
		m.bus.Close()
	}
	return err
}

// Reconnect resets a server's backoff schedule and circuit breaker and
// makes it try now: a connected server is reconnected, one waiting in
// backoff, with its circuit open, failed or idle attempts at once. It
// returns without waiting; watch the events or use [Manager.Wait]. From
// the moment it returns, Wait for connected and calls get the new session,
// never the one being replaced.
func (m *Manager) Reconnect(name string) error {
	s, err := m.lookup(name, "reconnect")
	if err != nil {
		return err
	}
	if s.disabled.Load() {
		return errorf(CodeServerDisabled, s.name, "reconnect", "server is disabled").with(Remedy{Kind: RemedyEnable, Server: s.name})
	}
	s.reconnects.Add(1)
	s.wake()
	return nil
}

// Enable connects a disabled server (a disabled one is listed but never
// connected). Enabling an enabled server does nothing.
func (m *Manager) Enable(name string) error {
	s, err := m.lookup(name, "enable")
	if err != nil {
		return err
	}
	if s.disabled.Swap(false) {
		s.wake()
	}
	return nil
}

// Disable closes a server's session, draining its requests in flight, and
// keeps it disconnected (state disabled) until [Manager.Enable]. Its tools
// stay listed, unavailable.
func (m *Manager) Disable(name string) error {
	s, err := m.lookup(name, "disable")
	if err != nil {
		return err
	}
	if !s.disabled.Swap(true) {
		s.wake()
	}
	return nil
}
