package luaapi

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Gateway is the MCP gateway that serves the manager's servers to MCP
// clients: mcp_serve, mcp_toolset, mcp_name_budget, mcp_client_mode and
// mcp_clients drive it. The command implements it over its own gateway; the runtime never
// sees that type.
type Gateway interface {
	// Start makes the gateway ready to serve, if it is not yet. A config
	// that serves calls it before adding its servers, so that they are
	// told from their first connection what the gateway's clients can
	// answer. It is called on the loop and must return at once.
	Start()
	// ServeHTTP listens on addr ("host:port"), replacing a listener on
	// another address; "" stops listening. The bearer token clients must
	// send is read from tokenFile, or taken from the environment when
	// tokenFile is "". Asking again for the address already served changes
	// nothing. The runtime calls it off the loop, one call at a time, in
	// the order the Lua code asked: it may take a while.
	ServeHTTP(addr, tokenFile string) error
	// SetToolsets replaces the named toolsets. It is called on the loop
	// and must return at once (apply the change in the background). The
	// runtime calls it again whenever a toolset changes, a function's
	// answer included: the gateway never calls back.
	SetToolsets(sets map[string]Toolset)
	// SetNameBudgets replaces the rules that give some clients other name
	// budgets (mcp_name_budget), the first match deciding. It is called on
	// the loop and must return at once.
	SetNameBudgets(rules []NameBudget)
	// SetModeFor replaces the function that chooses the mode of each
	// client session as it starts (mcp_client_mode); nil removes it. It
	// is called on the loop and must return at once. The gateway calls
	// f on its own goroutines, never on the loop: f asks Lua on the loop
	// and returns within ModeTimeout, "" leaving the client its default.
	SetModeFor(f func(ModeQuery) string)
	// Clients lists the connected MCP clients, oldest first. It is called
	// on the loop and must return at once.
	Clients() []Client
}

// Toolset is a snapshot of a named subset of the gateway's tools, as
// mcp_toolset declares it. Patterns follow path.Match against
// "server.tool"; a toolset a Lua function decides is handed over resolved.
type Toolset struct {
	// Include selects tools; if empty, every tool.
	Include []string
	// Exclude removes tools Include selected.
	Exclude []string
	// Resolved, if set, makes the toolset exactly Tools ("server.tool"):
	// the tools the function said yes to when the runtime last asked it,
	// which it does whenever the tools or the toolset change.
	Resolved bool
	Tools    []string
	// Version grows with every new snapshot of the toolset (never
	// reused, even across toolsets); an unchanged toolset keeps its
	// version.
	Version uint64
	// Mode is how the toolset's endpoint offers its tools ("direct",
	// "search" or "code"); "" for the gateway's default.
	Mode string
}

// Client is one MCP client connected to the gateway.
type Client struct {
	ID        string // the MCP session id ("stdio" for a stdio client)
	Name      string // from the client's initialize request
	Version   string
	Transport string // "stdio", "http" or "sse"
	Endpoint  string // e.g. "/mcp", "/servers/git/mcp"
	Since     time.Time
}

// noGateway is the error of the gateway builtins when the host has none.
func noGateway(fname string) string {
	return fname + ": this host serves no MCP clients (it was started without a gateway: luaapi.Options.Gateway is nil)"
}

// serveDecl is one mcp_serve: the listener the Lua code asks for.
type serveDecl struct {
	addr, tokenFile string
	where           string // "startup.lua:12", for errors
}

// mcp_serve{http = "127.0.0.1:8931" [, token_file = "…"]} → true | nil,
// err. In the config file it declares the listener, started once the whole
// file has run and stopped by a reload that no longer declares it;
// elsewhere it listens at once (and returns once it does or failed).
func (r *Runtime) luaServe(L *lua.LState) int {
	const fname = "mcp_serve"
	opts, ok := L.Get(1).(*lua.LTable)
	if !ok {
		argErr(L, fname, 1, "options expected, like {http = \"127.0.0.1:8931\"}, got "+L.Get(1).Type().String())
	}
	d := serveDecl{}
	opts.ForEach(func(k, v lua.LValue) {
		key, _ := k.(lua.LString)
		switch key {
		case "http":
			s, ok := v.(lua.LString)
			if !ok {
				argErr(L, fname, 1, "http must be an address string like \"127.0.0.1:8931\", got "+v.Type().String())
			}
			d.addr = string(s)
		case "token_file":
			s, ok := v.(lua.LString)
			if !ok || s == "" {
				argErr(L, fname, 1, "token_file must be the path of a file holding the token, got "+v.Type().String())
			}
			d.tokenFile = string(s)
		default:
			argErr(L, fname, 1, fmt.Sprintf("unknown option %s; mcp_serve takes http and token_file", lua.LVAsString(k)))
		}
	})
	if d.addr == "" {
		argErr(L, fname, 1, "http is required: the address to listen on, like \"127.0.0.1:8931\"")
	}
	if _, _, err := net.SplitHostPort(d.addr); err != nil {
		argErr(L, fname, 1, fmt.Sprintf("http = %q is not host:port: %v", d.addr, err))
	}
	d.where = strings.TrimSuffix(callerPosition(L), ": ")
	if t, ok := r.tasks[L]; ok && t.config != nil {
		r.declareServe(L, t.config, d)
		L.Push(lua.LTrue)
		return 1
	}
	if r.opts.Gateway == nil {
		raiseAt(L, "%s", noGateway(fname))
	}
	r.checkSuspend(L, fname)
	reply := r.listener.request(d)
	return r.await(L, fname, 2, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		var err error
		select {
		case err = <-reply:
		case <-ctx.Done():
			err = ctx.Err()
		case <-r.listener.done:
			err = errClosed
		}
		return func(L *lua.LState) []lua.LValue {
			if err != nil {
				return []lua.LValue{lua.LNil, lua.LString(serveError(d, err).Error())}
			}
			return []lua.LValue{lua.LTrue, lua.LNil}
		}
	})
}

// declareServe records mcp_serve in a config evaluation; a second one in
// the same file is an error naming both places.
func (r *Runtime) declareServe(L *lua.LState, want *desired, d serveDecl) {
	if r.opts.Gateway == nil && !want.checking {
		raiseAt(L, "%s", noGateway("mcp_serve"))
	}
	if want.serve != nil {
		raiseAt(L, "INVALID_CONFIG: mcp_serve is declared twice in %s (first at %s); declare one listener", want.file, want.serve.where)
	}
	want.serve = &d
}

// serveError names the listener a failed mcp_serve asked for.
func serveError(d serveDecl, err error) error {
	where := ""
	if d.where != "" {
		where = d.where + ": "
	}
	if d.addr == "" {
		return fmt.Errorf("%smcp_serve: stop listening: %w", where, err)
	}
	return fmt.Errorf("%smcp_serve(http = %q): %w", where, d.addr, err)
}

// mcp_clients() → list of {id, name, version, transport, endpoint, since}:
// the MCP clients connected to the gateway, oldest first.
func (r *Runtime) luaClients(L *lua.LState) int {
	if r.opts.Gateway == nil {
		L.RaiseError("%s", noGateway("mcp_clients"))
	}
	return pushList(L, r.opts.Gateway.Clients(), clientTable)
}

func clientTable(L *lua.LState, c Client) *lua.LTable {
	t := L.CreateTable(0, 6)
	t.RawSetString("id", lua.LString(c.ID))
	setString(t, "name", c.Name)
	setString(t, "version", c.Version)
	t.RawSetString("transport", lua.LString(c.Transport))
	t.RawSetString("endpoint", lua.LString(c.Endpoint))
	setTime(t, "since", c.Since)
	return t
}

// listener applies the listeners mcp_serve asks for, one at a time and in
// the order the loop asked, on its own goroutine: binding or closing a
// listener may take a while, and the loop never waits on the gateway.
type listener struct {
	gw   Gateway
	poke chan struct{} // capacity 1
	stop <-chan struct{}
	done chan struct{} // closed when the goroutine has exited

	mu sync.Mutex
	// mu guards queue.
	queue []serveRequest
}

type serveRequest struct {
	d     serveDecl // addr "" stops listening
	reply chan error
}

func startListener(gw Gateway, stop <-chan struct{}) *listener {
	l := &listener{gw: gw, poke: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	if gw == nil {
		close(l.done)
		return l
	}
	go l.run()
	return l
}

// request queues d without blocking; the returned channel gets the
// outcome.
func (l *listener) request(d serveDecl) <-chan error {
	reply := make(chan error, 1)
	l.mu.Lock()
	l.queue = append(l.queue, serveRequest{d: d, reply: reply})
	l.mu.Unlock()
	select {
	case l.poke <- struct{}{}:
	default:
	}
	return reply
}

func (l *listener) run() {
	defer close(l.done)
	for {
		select {
		case <-l.poke:
		case <-l.stop:
			return
		}
		l.mu.Lock()
		batch := l.queue
		l.queue = nil
		l.mu.Unlock()
		for _, req := range batch {
			req.reply <- l.gw.ServeHTTP(req.d.addr, req.d.tokenFile)
		}
	}
}

// wait is the outcome of a request, or errClosed if the runtime closed
// first.
func (l *listener) wait(reply <-chan error) error {
	select {
	case err := <-reply:
		return err
	case <-l.done:
		select {
		case err := <-reply:
			return err
		default:
			return errClosed
		}
	}
}
