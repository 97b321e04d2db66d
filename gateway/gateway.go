package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/tokens"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// Options configures a Gateway.
type Options struct {
	// Source is what the gateway serves; required.
	Source Source
	// Logger receives the gateway's own warnings. If nil, slog.Default().
	Logger *slog.Logger
	// Version is mcpvisor's, reported to clients on /mcp.
	Version string
	// NameBudget is the longest exposed tool or prompt name on /mcp and
	// the toolsets' endpoints, for clients SetClientBudgets gives no other.
	// If zero, DefaultNameBudget (49); it is kept within MinNameBudget and
	// MaxNameBudget.
	NameBudget int
	// KeepAlive, if set, pings each client at this interval and closes a
	// session that stops answering.
	KeepAlive time.Duration
	// Wait bounds how long a client's first lists (and reads of
	// resources, prompts and completions) wait for every declared,
	// enabled server to have had its first say (connected, failed,
	// backing off, waiting for a login), counted for each server from
	// when it starts. If zero, they are answered at once with what has
	// connected so far; either way a server that comes later is
	// announced with list_changed.
	Wait time.Duration
	// StatusTool offers the tool StatusTool on /mcp beside the resource
	// StatusURI, which is always there: what each server is doing, why it
	// is down and when it is tried again, for clients that read no
	// resources.
	StatusTool bool
	// MaxSessions caps the client sessions open at once, over every
	// transport; an initialize beyond it is refused with a *LimitError
	// (no session is closed to make room). If zero, DefaultMaxSessions.
	MaxSessions int
	// MaxClientCalls caps the requests one client session has in flight
	// upstream (calls, prompts, resource reads), however it sends them
	// (one at a time or a JSON-RPC batch); one beyond it is refused with
	// a *LimitError. If zero, DefaultMaxClientCalls; less than zero, no
	// cap.
	MaxClientCalls int
	// Mode is how the endpoints offer their tools to a client unless a
	// toolset (Toolset.Mode) or ModeFor chooses another: direct (the
	// default, ""), search or code. Check reports one it cannot serve.
	Mode Mode
	// ModeFor, if set, chooses the mode of each client session when it
	// starts (a client keeps it for the session); "" leaves the default.
	// It runs on the client's request goroutine, with no lock held.
	// SetModeFor replaces it.
	ModeFor func(ModeQuery) Mode
	// MetaPrefix starts the names of the meta-tools (search_tools,
	// describe_tools, call_tool, run_lua), for clients that need them
	// told apart from the tools' own.
	MetaPrefix string
	// Code runs a code-mode client's Lua chunk (run_lua) with env, the
	// client's tools; the gateway runs no Lua itself. Code mode is
	// refused without it.
	Code func(ctx context.Context, code string, env CodeEnv) (*mcp.CallToolResult, error)
	// FastPath turns the fast path for calls (over streamable HTTP and
	// stdio) on ("on") or off ("off"); see docs/gateway.md. If "", the
	// FastPathEnv environment variable's setting, else DefaultFastPath.
	FastPath string
}

// DefaultMaxSessions is Options.MaxSessions when zero.
const DefaultMaxSessions = 1000

// DefaultMaxClientCalls is Options.MaxClientCalls when zero.
const DefaultMaxClientCalls = 64

// Gateway serves the servers a Source keeps connected to MCP clients:
// everything on /mcp under prefixed names, each server on its own endpoint
// under its own names, and named toolsets. One goroutine (run) owns every
// endpoint's lists and follows the source's events; clients are served by
// the go-sdk on their transports' goroutines.
type Gateway struct {
	src     Source
	opts    Options
	log     *slog.Logger
	bus     *events.Bus
	clients clientTable
	lives   requestLives
	// fast is whether the fast path serves calls (fastpath.go); fixed by
	// New. sessionTimeout is then HTTPOptions.SessionTimeout, which the
	// gateway enforces itself (session.serving).
	fast           bool
	sessionTimeout atomic.Int64
	// holderIdle is HTTPOptions.SessionTimeout: a sessionless client's
	// round trip it does not come back to for this long is given up.
	holderIdle atomic.Int64
	fastServed atomic.Int64 // calls the fast path answered, for tests
	relays     logRelays    // calls whose clients hear their server's logs on the call's stream

	ctx    context.Context
	cancel context.CancelFunc
	work   chan func() // run by the run goroutine
	done   chan struct{}
	// nextToolsets is what SetToolsets left for the run goroutine, which
	// is poked to pick it up.
	nextToolsets atomic.Pointer[map[string]Toolset]
	poke         chan struct{}
	// notes are what servers say (log messages, resource updates), which
	// the deliver goroutine sends to clients; notesDone is closed when it
	// returns.
	notes     *notify.Listener
	notesDone chan struct{}
	// flushes are calls waiting for deliver to have sent what its
	// listener held when they asked: it closes each once it has.
	flushes chan chan struct{}
	// served lists the endpoints made so far, for deliver; the run
	// goroutine replaces it (never modifies it) as it makes one.
	served atomic.Pointer[[]*endpoint]
	// made is the endpoints made so far by key, for request handlers to
	// find one without a trip to the run goroutine; the run goroutine
	// replaces it (never modifies it) as it makes one.
	made atomic.Pointer[map[endpointKey]*endpoint]

	// Owned by the run goroutine.
	names     *namers
	endpoints map[endpointKey]*endpoint
	settle    *settling // its published state is read by request handlers
	// relist fires shrinkDelay after the first removal that left the
	// lists out of date; relisting is true while it is set.
	relist    *time.Timer
	relisting bool

	// toolsets is written by the run goroutine only; the map is never
	// modified once stored.
	toolsets atomic.Pointer[map[string]Toolset]

	view atomic.Pointer[view] // the latest, for request handlers
	// budgets are the rules SetClientBudgets set; nil for none.
	budgets atomic.Pointer[[]ClientBudget]
	// modeFor is the function that chooses clients' modes; nil for none.
	modeFor modeFunc
	// costs remembers the token counts of tool definitions.
	costs tokens.Cache
}

type endpointKey struct {
	sel  selection
	name string
}

// ErrClosed is returned for endpoints asked of a closed gateway.
var ErrClosed = errors.New("gateway: closed")

// New starts a gateway over opts.Source. Close it when done.
func New(opts Options) *Gateway {
	if opts.Source == nil {
		panic("gateway.New: no Source")
	}
	if err := opts.checkModes(); err != nil {
		panic("gateway.New: " + err.Error() + " (check Options.Check first)")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultMaxSessions
	}
	switch {
	case opts.MaxClientCalls == 0:
		opts.MaxClientCalls = DefaultMaxClientCalls
	case opts.MaxClientCalls < 0:
		opts.MaxClientCalls = 0 // session.begin: no bound
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &Gateway{src: opts.Source, opts: opts, log: opts.Logger, bus: opts.Source.Bus(),
		ctx: ctx, cancel: cancel, work: make(chan func()), done: make(chan struct{}), poke: make(chan struct{}, 1),
		notes:     opts.Source.Notices().Listen(notify.ListenOptions{Lossless: true}),
		notesDone: make(chan struct{}),
		flushes:   make(chan chan struct{}),
		names:     newNamers(opts.NameBudget),
		settle:    newSettling(opts.Wait),
		relist:    time.NewTimer(time.Hour),
		endpoints: map[endpointKey]*endpoint{}}
	g.relist.Stop()
	fast, err := fastPathOn(opts.FastPath)
	if err != nil {
		g.log.Warn("fast path: "+err.Error()+"; using the default", "default", DefaultFastPath)
	}
	g.fast = fast
	g.toolsets.Store(&map[string]Toolset{})
	g.served.Store(&[]*endpoint{})
	g.made.Store(&map[endpointKey]*endpoint{})
	g.clients.init(g)
	if opts.ModeFor != nil {
		g.SetModeFor(opts.ModeFor)
	}
	// Any client may answer what a server asks: servers that connect from
	// now on are told their client can (each call's answerer says whether
	// its client does).
	opts.Source.CallersAnswer(ask.All)
	// What the gateway follows is the servers' lifecycle and lists: a call
	// that went well says nothing to it.
	sub := g.bus.Subscribe(events.SubscribeOptions{Passive: []events.Kind{events.KindToolCall}})
	g.settle.update(g.src, time.Now())
	g.refresh()
	g.settle.publish()
	go g.run(sub)
	go g.deliver()
	return g
}

// run follows the source: after each burst of changes it builds a new
// view and applies it to every endpoint.
func (g *Gateway) run(sub *events.Subscription) {
	defer close(g.done)
	defer sub.Close()
	for {
		select {
		case <-g.ctx.Done():
			return
		case f := <-g.work:
			g.takeToolsets() // so that a caller sees the toolsets it set
			// and, making an endpoint, the servers declared before it asked
			// f runs even when the bus has closed: its caller waits for it.
			open := g.follow(sub)
			f()
			if !open {
				return
			}
		case <-g.poke:
			g.takeToolsets()
		case <-g.settle.timer.C:
			if !g.follow(sub) {
				return
			}
		case <-g.relist.C:
			g.relisting = false
			if !g.follow(sub) {
				return
			}
			g.refresh()
		case <-sub.Ready():
			if !g.follow(sub) {
				return
			}
		}
	}
}

// refresh builds a new view and applies it to every endpoint; only the
// run goroutine (or New, before it starts) calls it.
func (g *Gateway) refresh() {
	if g.relisting {
		g.relist.Stop()
		g.relisting = false
	}
	v, collisions := g.names.build(g.src)
	g.view.Store(v)
	for _, c := range collisions {
		g.bus.Emit(c.b.server, "", NameCollision{Tool: c.b.name, Exposed: c.given, With: c.a.server + "." + c.a.name, Wanted: c.exposed})
	}
	for _, ep := range g.endpoints {
		ep.apply(v)
	}
}

func (g *Gateway) currentView() *view { return g.view.Load() }

// do runs f on the run goroutine and waits for it.
func (g *Gateway) do(f func()) error {
	ran := make(chan struct{})
	select {
	case g.work <- func() { f(); close(ran) }:
	case <-g.ctx.Done():
		return ErrClosed
	case <-g.done: // the bus closed: the host is shutting down
		return ErrClosed
	}
	<-ran // run runs what it takes, even as it returns
	return nil
}

// endpoint returns the endpoint for sel and name, making it on first use.
func (g *Gateway) endpoint(sel selection, name string) (*endpoint, error) {
	key := endpointKey{sel, name}
	if ep := (*g.made.Load())[key]; ep != nil && !g.closing() {
		return ep, nil // every request but an endpoint's first: no hand-off
	}
	var ep *endpoint
	err := g.do(func() {
		if ep = g.endpoints[key]; ep == nil {
			ep = g.newEndpoint(sel, name)
			ep.apply(g.currentView())
			g.endpoints[key] = ep
			served := append(slices.Clone(*g.served.Load()), ep)
			g.served.Store(&served)
			made := maps.Clone(*g.made.Load())
			made[key] = ep
			g.made.Store(&made)
		}
	})
	return ep, err
}

// closing reports whether the gateway no longer hands out endpoints (do
// would refuse).
func (g *Gateway) closing() bool {
	select {
	case <-g.ctx.Done():
		return true
	case <-g.done:
		return true
	default:
		return false
	}
}

// SetToolsets replaces the named toolsets; the endpoints of toolsets that
// changed relist (and tell their clients), the others are untouched. A
// toolset whose Version is older than the one in force keeps the one in
// force. It does not wait for any of that, and the gateway keeps no
// reference to the caller: what it serves is decided from the snapshots.
func (g *Gateway) SetToolsets(sets map[string]Toolset) {
	g.nextToolsets.Store(&sets)
	select {
	case g.poke <- struct{}{}:
	default: // already poked; it will take the latest
	}
}

// takeToolsets applies what SetToolsets left, if anything.
func (g *Gateway) takeToolsets() {
	next := g.nextToolsets.Swap(nil)
	if next == nil {
		return
	}
	old := *g.toolsets.Load()
	sets := make(map[string]Toolset, len(*next))
	for name, ts := range *next {
		if cur, ok := old[name]; ok && ts.Version < cur.Version {
			ts = cur // a snapshot older than the one served
		}
		sets[name] = ts
	}
	g.toolsets.Store(&sets)
	v := g.currentView()
	for key, ep := range g.endpoints {
		if key.sel == oneToolset && !sameToolset(old[key.name], sets[key.name]) {
			ep.apply(v)
		}
	}
}

// toolset returns a toolset by name, or nil.
func (g *Gateway) toolset(name string) *Toolset {
	ts, ok := (*g.toolsets.Load())[name]
	if !ok {
		return nil
	}
	return &ts
}

// Toolsets lists the toolsets' names, sorted, including those just set.
func (g *Gateway) Toolsets() []string {
	_ = g.do(func() {}) // takes what SetToolsets left
	return slices.Sorted(maps.Keys(*g.toolsets.Load()))
}

// ServeStdio serves one client on r and w (a process's stdin and stdout)
// until r ends or ctx is done. With server or toolset set, it serves that
// server's endpoint or that toolset's, as over HTTP.
func (g *Gateway) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser, server, toolset string) error {
	sel, name := everything, ""
	switch {
	case server != "":
		sel, name = oneServer, server
	case toolset != "":
		sel, name = oneToolset, toolset
	}
	ep, err := g.endpoint(sel, name)
	if err != nil {
		return err
	}
	// Nothing is read until the session is marked as the stdio one, so
	// that it is listed as such however fast the client initializes.
	gate := &gatedReader{r: r, open: make(chan struct{})}
	t := &stdioTransport{r: gate, w: w}
	if g.fast {
		t.fast = &stdioFast{g: g, ep: ep}
	}
	ss, err := ep.srv.Connect(ctx, t, nil)
	if err != nil {
		close(gate.open)
		return err
	}
	if t.fast != nil {
		t.fast.ss = ss // read by the reader only once the gate opens
	}
	defer g.clients.serveStdio(ss)()
	close(gate.open)
	stop := context.AfterFunc(ctx, func() { _ = ss.Close() })
	defer stop()
	err = ss.Wait()
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// Shutdown ends every client session gracefully: from now on new
// sessions and new calls are refused with ErrShuttingDown, the calls in
// flight may finish until ctx is done, then those still running are
// cancelled upstream and answered with an error saying mcpvisor is
// shutting down, and every session is closed. It returns when they are,
// with ctx's error if the grace ran out. Close the gateway afterwards;
// stop HTTP listeners from accepting (HTTPServer.Close) first.
func (g *Gateway) Shutdown(ctx context.Context) error {
	sessions := g.clients.drain()
	var idle []<-chan struct{}
	for _, s := range sessions {
		idle = append(idle, s.drain())
	}
	var err error
	for _, ch := range idle {
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	if err != nil {
		for _, s := range sessions {
			s.cancel(ErrShuttingDown)
		}
		for _, ch := range idle {
			<-ch // cancelled calls return at once
		}
	}
	// The answers are written; the HTTP requests carrying them end once
	// sent. Then the sessions' streams end.
	sent, stop := context.WithTimeout(context.Background(), deleteWait)
	defer stop()
	for _, s := range sessions {
		select {
		case <-s.served():
		case <-sent.Done():
		}
	}
	for _, s := range sessions {
		if s.ss == nil { // a holder of sessionless calls: none is left
			s.cancel(ErrShuttingDown)
			g.src.ReleaseClient(s.label)
			continue
		}
		_ = s.ss.Close()
	}
	return err
}

// Close ends every client session at once (cancelling their calls, as
// Shutdown does when its grace is over) and stops following the source.
// HTTP listeners are closed by their owners.
func (g *Gateway) Close() {
	over, cancel := context.WithCancel(context.Background())
	cancel()
	_ = g.Shutdown(over)
	g.cancel()
	<-g.done
	<-g.notesDone
	for _, ep := range g.endpoints {
		for ss := range ep.srv.Sessions() {
			_ = ss.Close()
		}
	}
	g.clients.wait()
}

// gatedReader reads from r once open is closed.
type gatedReader struct {
	r    io.ReadCloser
	open chan struct{}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

func (g *gatedReader) Close() error { return g.r.Close() }
