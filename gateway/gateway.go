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

	"github.com/mcpvisor/mcpvisor/events"
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
	// served lists the endpoints made so far, for deliver; the run
	// goroutine replaces it (never modifies it) as it makes one.
	served atomic.Pointer[[]*endpoint]

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
		names:     newNamers(opts.NameBudget),
		settle:    newSettling(opts.Wait),
		relist:    time.NewTimer(time.Hour),
		endpoints: map[endpointKey]*endpoint{}}
	g.relist.Stop()
	g.toolsets.Store(&map[string]Toolset{})
	g.served.Store(&[]*endpoint{})
	g.clients.init(g)
	// Any client may answer what a server asks: servers that connect from
	// now on are told their client can (each call's answerer says whether
	// its client does).
	opts.Source.CallersAnswer(ask.All)
	sub := g.bus.Subscribe(events.SubscribeOptions{})
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
			if !g.follow(sub) {
				return
			}
			f()
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

// follow takes the events the source has published: it relists if they
// changed what is offered, and tells the clients waiting for the servers'
// first say whether to go on. It reports false once the bus has closed
// (the host is shutting down).
func (g *Gateway) follow(sub *events.Subscription) bool {
	var grows, shrinks bool
	// Whether a server may have had its say or started to be waited for;
	// a burst of calls' events alone leaves the settling as it was.
	moved := g.settle.pending()
	for {
		e, ok, err := sub.TryRecv()
		if err != nil {
			return false
		}
		if !ok {
			break
		}
		switch g.change(e) {
		case listsGrow:
			grows = true
		case listsShrink:
			shrinks = true
		}
		moved = moved || (changesLists(e.Kind) || changesState(e.Kind)) && e.Text("client") == ""
		if (e.Kind == events.KindAdded || e.Kind == events.KindDisabled) && e.Text("client") == "" {
			g.settle.forget(e.Server)
		}
	}
	// Settling first: a server heard from now has its items read by the
	// relisting that follows, before the clients waiting for it go on.
	settled := moved && g.settle.update(g.src, time.Now())
	switch {
	case settled || grows:
		g.refresh()
	case shrinks && !g.relisting:
		g.relisting = true
		g.relist.Reset(shrinkDelay)
	}
	g.settle.publish()
	return true
}

// shrinkDelay is how long what leaves the lists (a server removed,
// disabled, failed or restarting) stays listed before the endpoints
// relist, unless something is added first. A server restarted by a
// reload of the config, or one that reconnects at once, comes back
// within it and its clients see no list change at all; a burst of
// removals reaches each client as one list_changed per list. A call to
// a tool that is leaving is answered with the reason its server is down.
const shrinkDelay = 500 * time.Millisecond

// listChange is how an event can change what the endpoints list.
type listChange int

const (
	listsSame listChange = iota
	listsGrow
	listsShrink
)

// change tells how e can change what the endpoints list. A client's own
// session of a per-client server changes nothing: the server's own
// session lists its tools. A server that connects, is added, changes its
// lists or comes back may add to them (or replace items, which is
// applied at once too); one that is removed or turns off only takes away.
func (g *Gateway) change(e events.Event) listChange {
	if e.Text("client") != "" {
		return listsSame
	}
	switch {
	case e.Kind == events.KindRemoved:
		return listsShrink
	case changesLists(e.Kind):
		return listsGrow
	case e.Server == "" || !changesState(e.Kind):
		return listsSame
	}
	// A change of state turns a server's items on or off (see offered):
	// disabled, enabled, failed for good, recovered.
	st, err := g.src.Status(e.Server)
	on := err == nil && offered(st.State)
	switch {
	case on != g.currentView().down[e.Server]:
		return listsSame
	case on:
		return listsGrow
	}
	return listsShrink
}

// changesState reports whether an event of kind k is a server's change
// of state.
func changesState(k events.Kind) bool {
	switch k {
	case events.KindConnecting, events.KindBackoff, events.KindCircuit, events.KindFailed,
		events.KindUnauthorized, events.KindIdle, events.KindClosing, events.KindDisabled:
		return true
	}
	return false
}

// changesLists reports whether an event of kind k can change what the
// endpoints list.
func changesLists(k events.Kind) bool {
	switch k {
	case events.KindAdded, events.KindRemoved, events.KindConnected,
		events.KindToolsChanged, events.KindResourcesChanged, events.KindPromptsChanged,
		events.KindLagged:
		return true
	}
	return false
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
		g.bus.Publish(events.KindNameCollision, c.b.server, events.Fields{
			"tool": c.b.name, "exposed": c.given, "with": c.a.server + "." + c.a.name, "wanted": c.exposed})
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
	<-ran
	return nil
}

// endpoint returns the endpoint for sel and name, making it on first use.
func (g *Gateway) endpoint(sel selection, name string) (*endpoint, error) {
	var ep *endpoint
	err := g.do(func() {
		key := endpointKey{sel, name}
		if ep = g.endpoints[key]; ep == nil {
			ep = g.newEndpoint(sel, name)
			ep.apply(g.currentView())
			g.endpoints[key] = ep
			served := append(slices.Clone(*g.served.Load()), ep)
			g.served.Store(&served)
		}
	})
	return ep, err
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
	ss, err := ep.srv.Connect(ctx, &stdioTransport{r: gate, w: w}, nil)
	if err != nil {
		close(gate.open)
		return err
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
