package luaapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// ModeQuery is what the gateway tells the mode function (mcp_client_mode)
// of a client whose session starts.
type ModeQuery struct {
	// Client and Version are what the client gave when it connected.
	Client, Version string
	// Endpoint is the path it connected to ("/mcp",
	// "/toolsets/dev/mcp"); Toolset the toolset of a toolset's endpoint,
	// else "".
	Endpoint, Toolset string
	// Default is the mode the client gets unless the function chooses
	// another: its toolset's, else the gateway's.
	Default string
}

// ModeTimeout bounds how long a client's session waits for the mode
// function's answer. A function that has not answered by then (the loop
// busy with a long chunk, the function waiting) or fails leaves the
// client its default mode, and a hook_error event says why: a client is
// never kept waiting long by Lua.
const ModeTimeout = time.Second

// modeNames are the modes a toolset or the mode function may choose.
var modeNames = []string{"direct", "search", "code"}

// checkMode is s in lower case if it names a mode, else an error listing
// them.
func checkMode(s string) (string, error) {
	m := strings.ToLower(strings.TrimSpace(s))
	if !slices.Contains(modeNames, m) {
		return "", fmt.Errorf("mode %q: unknown; the modes are direct, search and code", s)
	}
	return m, nil
}

// clientModeDecl is one mcp_client_mode: the function in force. Owned by
// the loop.
type clientModeDecl struct {
	fn    *lua.LFunction // nil in a REPL call that removes it
	where string         // "startup.lua:4", for hook_error
	// origin is as askHandler.origin: a reload that no longer declares
	// it removes only a function the config (or its callbacks) set.
	origin int
}

// name is how hook_error names the function.
func (d *clientModeDecl) name() string {
	if d.where == "" {
		return "mcp_client_mode"
	}
	return "mcp_client_mode at " + d.where
}

// mcp_client_mode(fn) sets the function that chooses the mode of each
// client session the gateway starts: fn(client) gets {name, version,
// endpoint, toolset, default} and returns "direct", "search", "code", or
// nil for the default (the toolset's mode, else serve --mode). It runs as
// a task under the hooks' rules, bounded by ModeTimeout; a client keeps
// the mode it was given for its session. mcp_client_mode(nil) removes it.
// In the config file it takes effect once the whole file has run and goes
// with a reload that no longer sets it; elsewhere at once.
func (r *Runtime) luaClientMode(L *lua.LState) int {
	const fname = "mcp_client_mode"
	d := &clientModeDecl{where: declaredAt(L)}
	switch fn := L.Get(1).(type) {
	case *lua.LFunction:
		d.fn = fn
	case *lua.LNilType:
	default:
		L.ArgError(1, "function(client) expected, returning \"direct\", \"search\", \"code\" or nil, or nil to remove it; got "+fn.Type().String())
	}
	t, inTask := r.tasks[L]
	if inTask && t.config != nil {
		want := t.config
		if r.opts.Gateway == nil && !want.checking {
			L.RaiseError("%s", noGateway(fname))
		}
		if d.fn == nil {
			L.ArgError(1, "function(client) expected (a config drops it by no longer setting it)")
		}
		if want.clientMode != nil {
			L.RaiseError("INVALID_CONFIG: %s is set twice in %s (first at %s); set it once", fname, want.file, want.clientMode.where)
		}
		want.clientMode = d
		return 0
	}
	if r.opts.Gateway == nil {
		L.RaiseError("%s", noGateway(fname))
	}
	if inTask {
		d.origin = t.origin // set by a callback of the config: goes with it
	}
	r.setClientMode(d)
	return 0
}

// setClientMode puts d in force, or removes the function when d has
// none, and tells the gateway when it starts or stops having one to ask.
func (r *Runtime) setClientMode(d *clientModeDecl) {
	had := r.clientMode != nil
	if d == nil || d.fn == nil {
		r.clientMode = nil
	} else {
		r.clientMode = d
	}
	switch has := r.clientMode != nil; {
	case has && !had:
		r.opts.Gateway.SetModeFor(r.askMode)
	case !has && had:
		r.opts.Gateway.SetModeFor(nil)
	}
}

// applyClientMode makes the mode function match what the config sets: the
// one it sets replaces the one in force, and one an earlier config (or its
// callbacks) set goes when this one sets none. One set at the REPL stays
// unless the config sets one.
func (r *Runtime) applyClientMode(want *desired) {
	if r.opts.Gateway == nil {
		return
	}
	cur := r.clientMode
	switch {
	case want.clientMode != nil:
		want.clientMode.origin = want.gen
		r.setClientMode(want.clientMode)
	case cur != nil && cur.origin != 0 && cur.origin < want.gen:
		r.setClientMode(nil)
	}
}

// askMode is the gateway's mode function: it runs the Lua function in
// force as a budgeted task on the loop and waits for its answer at most
// ModeTimeout, off the loop. "" leaves the client its default mode: no
// function, a function that answered nil, failed or was too slow (the
// last two published as hook_error), a runtime closed.
func (r *Runtime) askMode(q ModeQuery) string {
	ctx, cancel := context.WithTimeoutCause(context.Background(), ModeTimeout,
		fmt.Errorf("no answer within %v; the client gets its default mode", ModeTimeout))
	defer cancel()
	mode, err := fromOutside(r, ctx, func(reply func(string)) {
		d := r.clientMode
		if d == nil || r.closing {
			reply("")
			return
		}
		r.spawnWith(ctx, d.fn, []lua.LValue{modeQueryTable(r.state, q)}, taskOptions{budget: r.opts.SliceBudget, origin: d.origin},
			func(vals []lua.LValue, err error) {
				mode, err := modeAnswer(vals, err)
				if err != nil && ctx.Err() == nil {
					r.modeFailed(d.name(), q, err)
				}
				reply(mode)
			})
	})
	if err != nil && !errors.Is(err, errClosed) {
		r.modeFailed("mcp_client_mode", q, err)
	}
	return mode
}

// modeQueryTable is the client as the mode function sees it; toolset is
// nil off a toolset's endpoint.
func modeQueryTable(L *lua.LState, q ModeQuery) *lua.LTable {
	t := L.CreateTable(0, 5)
	t.RawSetString("name", lua.LString(q.Client)) // "" rather than nil: client.name:match(…) works
	t.RawSetString("version", lua.LString(q.Version))
	t.RawSetString("endpoint", lua.LString(q.Endpoint))
	setString(t, "toolset", q.Toolset)
	setString(t, "default", q.Default)
	return t
}

// modeAnswer reads what the mode function's task ended with: a mode, or
// nil (or false) for the default.
func modeAnswer(vals []lua.LValue, err error) (string, error) {
	if err != nil {
		return "", err
	}
	if len(vals) == 0 || !lua.LVAsBool(vals[0]) {
		return "", nil
	}
	s, ok := vals[0].(lua.LString)
	if !ok {
		return "", fmt.Errorf("it must return \"direct\", \"search\", \"code\" or nil, got %s", vals[0].Type())
	}
	m, err := checkMode(string(s))
	if err != nil {
		return "", fmt.Errorf("it returned %w", err)
	}
	return m, nil
}

// modeFailed publishes hook_error for a mode function that failed or did
// not answer in time: the client gets its default mode, the person the
// reason.
func (r *Runtime) modeFailed(who string, q ModeQuery, err error) {
	if r.base.Err() != nil {
		return // shutting down
	}
	p := HookError{Hook: who, Client: q.Client, Endpoint: q.Endpoint, Error: err.Error()}
	var le *Error
	if errors.As(err, &le) {
		p.Traceback = le.Traceback
	}
	r.bus.Emit("", "", p)
}
