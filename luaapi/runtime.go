package luaapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/events/hud"
	"github.com/mcpvisor/mcpvisor/internal/textsafe"
	"github.com/mcpvisor/mcpvisor/internal/tokens"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/notify"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// Manager is everything the runtime needs of the manager, for passing it
// as one value; *manager.Manager implements it. Each part of the Lua API
// holds only the piece it uses.
type Manager interface {
	Servers
	Lifecycle
	Observer
	Meter
	Toolbox
	ResourceReader
	PromptGetter
	EventSource
	Answering
}

var _ Manager = (*manager.Manager)(nil)

// EventSource is the manager's event bus and its notices: the runtime
// publishes its own events on the bus and feeds hooks and the HUD model
// from it, and hooks (as notification events) from the notices. [New]
// calls Bus and Notices once.
type EventSource interface {
	Bus() *events.Bus
	Notices() *notify.Hub
}

// Options configures a [Runtime].
type Options struct {
	// Manager is required. It must be safe for concurrent use; the package
	// doc says which goroutines call what.
	Manager Manager
	// Stdout receives print output and nothing else. If nil, os.Stdout.
	Stdout io.Writer
	// Binary is the path of the running mcpvisor, exposed as MCPVISOR.
	// If empty, os.Executable.
	Binary string
	// ScriptDir is where require finds modules (scripts/ beside
	// startup.lua). If empty, "scripts".
	ScriptDir string
	// LookupEnv resolves ${VAR} in specs. If nil, os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Logger receives failures of hooks, timers and callbacks. If nil,
	// they are discarded (they are still published as hook_error events).
	Logger *slog.Logger
	// SliceBudget bounds how long a hook, timer or callback may run between
	// two suspensions before it is stopped. If zero, 100ms.
	SliceBudget time.Duration
	// MemoryLimit stops a chunk (REPL line, -e, script, config) that makes
	// the host's memory (what it holds from the system) grow past it, with
	// a Lua error naming the limit; a single value that would take it past
	// is refused before it is made. If zero, DefaultMemoryLimit (1 GiB);
	// negative turns it off.
	MemoryLimit int64
	// ConfigBudget bounds how long a config file (startup.lua, a reload,
	// a check) may run on the Lua loop, its slices summed: time it spends
	// waiting (mcp_wait, sleep, a call) does not count. A file over it is
	// stopped with an error naming its file and line, and the loop is
	// free again; see LoadConfig for what is applied. If zero,
	// DefaultConfigBudget; negative, none.
	ConfigBudget time.Duration
	// HUD is the terminal display that mcp_hud switches. If nil, there is
	// no terminal and mcp_hud says so.
	HUD HUD
	// Gateway serves the servers to MCP clients: mcp_serve, mcp_toolset
	// and mcp_clients drive it. If nil, they raise an error saying the
	// host has none (a config that uses them still passes CheckConfig).
	Gateway Gateway
	// Prompter asks the person at the terminal a server's elicitation
	// that no mcp_handle handler answers. If nil, such a request is left
	// to the manager's other answerers (or refused), and elicitation is
	// offered only while a handler is set.
	Prompter Prompter
}

// Runtime is the Lua control plane: one goroutine (the loop) owns the Lua
// state and runs every chunk as a coroutine task. Create it with [New] and
// stop it with [Runtime.Close].
type Runtime struct {
	opts Options
	out  io.Writer
	// costs remembers what tool definitions cost in tokens, for
	// mcp_tools and mcp_discover; safe from any goroutine. counting is
	// set while a background count for mcp_tools runs.
	costs    tokens.Cache
	counting atomic.Bool

	// Options.Manager, as the piece each part of the API uses.
	servers   Servers
	lifecycle Lifecycle
	observer  Observer
	meter     Meter
	toolbox   Toolbox
	resources ResourceReader
	prompts   PromptGetter
	bus       *events.Bus

	// Owned by the loop goroutine: nothing else may touch them, which is
	// why none is exported.
	state   *lua.LState // the Lua state every task is a thread of
	tasks   map[*lua.LState]*task
	idle    []*lua.LState     // finished threads kept for new tasks
	arm     *lua.LFunction    // the bootstrap's traceback arming, made once
	root    *lua.LFunction    // the bootstrap, made once
	closing bool              // set by Close: no task may start background work
	hooks   []*callback       // mcp_on, in registration order
	timers  map[int]*callback // mcp_after, mcp_every by id
	nextID  int               // last hook or timer id
	config  configState       // what the config file declared
	hud     hud.Model         // mcp_hud_model's view, fed by the loop's subscription
	// toolsets are the gateway's toolsets in force (mcp_toolset), and
	// toolsetVersion the last version given to a snapshot of one.
	// toolsetsDirty says a snapshot changed since the gateway was last
	// handed them, flushQueued that a hand-over is posted, toolsStale that
	// an event changed the tools since the toolset functions were asked.
	toolsets       map[string]*toolsetEntry
	toolsetVersion uint64
	toolsetsDirty  bool
	flushQueued    bool
	toolsStale     bool
	budgets        budgetRules     // mcp_name_budget
	clientMode     *clientModeDecl // mcp_client_mode; nil for none

	listener *listener // applies mcp_serve off the loop
	// toolServers serve the mcp_tool tools, by lower-cased server name.
	toolServers map[string]*luaServer
	handlers    map[ask.Kind]*askHandler // mcp_handle, by kind
	roots       hostRoots                // mcp_roots

	// What the answerer reads off the loop, published by the loop.
	handled   atomic.Uint32               // ask.Kind: the kinds with a handler
	rootsSnap atomic.Pointer[[]*mcp.Root] // the roots in force; nil when none
	rootsNote *rootsNotifier              // tells the manager the roots changed

	work chan func() // closures to run on the loop

	asyncMu sync.Mutex
	// asyncMu guards async: closures posted by goroutines that must never
	// block (SDK notification handlers), run in order.
	async     []func()
	asyncPoke chan struct{} // capacity 1
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when the loop has exited
	base      context.Context
	cancel    context.CancelFunc // cancels every task
	pending   sync.WaitGroup     // goroutines doing a task's async work
	once      sync.Once
	sub       *events.Subscription // the bus, drained by the loop for hooks
	// callsAsked is whether sub asks for tool calls (askForCalls); owned
	// by the loop.
	callsAsked bool
	notes      *notify.Listener // what servers say, drained by the loop for hooks
	memory     memoryWatch
	memDone    chan struct{} // closed when the memory watchdog has exited
}

// New builds the Lua state and starts the loop.
func New(opts Options) (*Runtime, error) {
	if opts.Manager == nil {
		return nil, errors.New("luaapi: Options.Manager is required")
	}
	if opts.Stdout == nil {
		opts.Stdout = os.Stdout
	}
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err == nil {
			opts.Binary = exe
		}
	}
	if opts.ScriptDir == "" {
		opts.ScriptDir = "scripts"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.SliceBudget <= 0 {
		opts.SliceBudget = 100 * time.Millisecond
	}
	if opts.MemoryLimit == 0 {
		opts.MemoryLimit = DefaultMemoryLimit
	}
	if opts.ConfigBudget == 0 {
		opts.ConfigBudget = DefaultConfigBudget
	}
	base, cancel := context.WithCancel(context.Background())
	r := &Runtime{
		opts:      opts,
		out:       opts.Stdout,
		servers:   opts.Manager,
		lifecycle: opts.Manager,
		observer:  opts.Manager,
		meter:     opts.Manager,
		toolbox:   opts.Manager,
		resources: opts.Manager,
		prompts:   opts.Manager,
		bus:       opts.Manager.Bus(),
		tasks:     make(map[*lua.LState]*task),
		timers:    make(map[int]*callback),
		handlers:  make(map[ask.Kind]*askHandler),
		work:      make(chan func(), 256),
		asyncPoke: make(chan struct{}, 1),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		base:      base,
		cancel:    cancel,
	}
	r.state = newState(opts.ScriptDir)
	r.install()
	// Tool calls only while a hook takes them (askForCalls); mcp_hud_model
	// reads calls from the metrics.
	r.sub = r.bus.Subscribe(events.SubscribeOptions{QueueSize: 4096, Passive: []events.Kind{events.KindToolCall}})
	// Hooks only watch what servers say: never make a server wait for them.
	r.notes = opts.Manager.Notices().Listen(notify.ListenOptions{QueueSize: 4096})
	r.hud.ApplyAll(r.bus.History(0)) // servers added before us; the overlap is skipped
	r.listener = startListener(opts.Gateway, r.stop)
	r.rootsNote = startRootsNotifier(opts.Manager, r.stop)
	opts.Manager.SetAnswerer(&answerer{r: r})
	r.memory.limit, r.memory.started = uint64(opts.MemoryLimit), make(chan struct{}, 1)
	r.memDone = make(chan struct{})
	if opts.MemoryLimit > 0 {
		watches.Store(r.state.G, &r.memory)
		go r.memory.watch(r.stop, r.memDone)
	} else {
		close(r.memDone)
	}
	go r.loop()
	return r, nil
}

// loop runs posted work one closure at a time until Close.
func (r *Runtime) loop() {
	defer close(r.done)
	for {
		select {
		case f := <-r.work:
			f()
		case <-r.sub.Ready():
			r.drainEvents()
		case <-r.notes.Ready():
			r.drainNotices()
		case <-r.asyncPoke:
			r.asyncMu.Lock()
			batch := r.async
			r.async = nil
			r.asyncMu.Unlock()
			for _, f := range batch {
				f()
			}
		case <-r.stop:
			return
		}
	}
}

// post hands f to the loop. It reports false if the runtime is closed.
func (r *Runtime) post(f func()) bool {
	select {
	case r.work <- f:
		return true
	case <-r.stop:
		return false
	}
}

// postAsync queues f for the loop without ever blocking the caller.
func (r *Runtime) postAsync(f func()) {
	r.asyncMu.Lock()
	r.async = append(r.async, f)
	r.asyncMu.Unlock()
	select {
	case r.asyncPoke <- struct{}{}:
	default:
	}
}

// Close cancels every task, waits for their background work and stops
// the loop. It is idempotent.
func (r *Runtime) Close() {
	r.once.Do(func() {
		r.opts.Manager.SetAnswerer(nil) // the loop answers no more
		r.cancel()
		// Seal the loop against new background work before waiting for
		// it: pending.Add runs on the loop, and an Add racing this Wait
		// could start work the Wait does not cover.
		sealed := make(chan struct{})
		if r.post(func() { r.closing = true; r.stopTimers(); close(sealed) }) {
			<-sealed
		}
		r.pending.Wait()
		close(r.stop)
		<-r.done
		<-r.memDone
		<-r.listener.done
		<-r.rootsNote.done
		r.sub.Close()
		watches.Delete(r.state.G)
		r.notes.Close()
		r.state.Close()
	})
}

// Result is what a chunk returned, rendered for display.
type Result struct {
	// Values holds each returned value as text: strings as they are but for
	// the characters a terminal would act on or hide (escape sequences,
	// bidi overrides, zero-width characters), which are written out as
	// escapes; newlines and tabs stay. Everything else is pretty-printed.
	Values []string
}

// Exec compiles src and runs it as a task, waiting until the task ends
// (across any mcp_call or mcp_wait it makes). Cancelling ctx cancels the
// task. Errors are [*Error] values carrying the Lua message.
func (r *Runtime) Exec(ctx context.Context, src, chunk string) (Result, error) {
	type outcome struct {
		res Result
		err error
	}
	ch := make(chan outcome, 1)
	ok := r.post(func() {
		fn, err := r.state.Load(stringReader(src), chunk)
		if err != nil {
			ch <- outcome{err: syntaxError(err)}
			return
		}
		r.spawn(ctx, fn, nil, func(vals []lua.LValue, err error) {
			ch <- outcome{res: render(vals), err: err}
		})
	})
	if !ok {
		return Result{}, errClosed
	}
	select {
	case o := <-ch:
		return o.res, o.err
	case <-r.done:
		return Result{}, errClosed
	}
}

// ExecFile runs a file as one task, like Exec.
func (r *Runtime) ExecFile(ctx context.Context, path string) (Result, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	return r.Exec(ctx, string(src), filepath.Base(path))
}

// Incomplete reports whether src, as a chunk or as a bare expression, is a
// prefix that more lines could complete: it does not parse and a parse
// error is at end of input. This is how the lua REPL decides to show its
// continuation prompt.
func Incomplete(src string) bool {
	_, errChunk := parseChunk(src)
	_, errExpr := parseChunk("return " + src)
	if errChunk == nil || errExpr == nil {
		return false
	}
	return errAtEOF(errChunk) || errAtEOF(errExpr)
}

var errClosed = errors.New("the Lua runtime is closed")

func render(vals []lua.LValue) Result {
	var res Result
	for _, v := range vals {
		if s, ok := v.(lua.LString); ok {
			res.Values = append(res.Values, textsafe.Block(string(s)))
		} else {
			res.Values = append(res.Values, Pretty(v))
		}
	}
	return res
}

// ExprOrChunk returns "return "+src when src is a bare expression, so a
// REPL can print its value, and src unchanged otherwise.
func ExprOrChunk(src string) string {
	if _, err := parseChunk("return " + src); err == nil {
		return "return " + src
	}
	return src
}
