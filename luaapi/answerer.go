package luaapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// Prompter asks the person at the terminal what a server asks, when no Lua
// handler answers it. The command implements it over its REPL.
type Prompter interface {
	// Elicit shows the request (a form or a URL) and returns the person's
	// answer. It returns ask.ErrNoAnswer when nobody can be asked now,
	// and must give up when ctx ends. It is called from the manager's
	// goroutines, never from the loop.
	Elicit(ctx context.Context, from ask.From, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
}

// HandlerError is what a server gets when the Lua handler of its request
// failed: it raised an error or returned nil, err (Err is then the Lua
// *Error or the error it returned), it returned what cannot be sent, or
// it had not answered when the request ended (Err wraps ctx's cause).
type HandlerError struct {
	Kind    ask.Kind
	Server  string
	Handler string // mcp_handle("sampling") at startup.lua:4
	Err     error
}

func (e *HandlerError) Error() string {
	return fmt.Sprintf("%s, asked by server %q: %v", e.Handler, e.Server, e.Err)
}

func (e *HandlerError) Unwrap() error { return e.Err }

// answerer answers servers' requests for the host: the Lua handlers
// (mcp_handle), then the host's roots (mcp_roots) or the prompter. Its
// methods run on the manager's goroutines: they read the loop's state
// only through the atomics the loop publishes, and run Lua only by
// posting to the loop.
type answerer struct{ r *Runtime }

var _ ask.Answerer = (*answerer)(nil)

// Offers is the kinds with a handler, roots when the host has some, and
// elicitation when a prompter is there.
func (a *answerer) Offers() ask.Kind {
	k := ask.Kind(a.r.handled.Load())
	if a.r.rootsSnap.Load() != nil {
		k |= ask.Roots
	}
	if a.r.opts.Prompter != nil {
		k |= ask.Elicitation
	}
	return k
}

// Elicit asks the elicitation handler, else the prompter.
func (a *answerer) Elicit(ctx context.Context, from ask.From, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if a.handles(ask.Elicitation) {
		res, err := askLua(a.r, ctx, ask.Elicitation, from,
			func(L *lua.LState) []lua.LValue { return []lua.LValue{elicitTable(L, p), lua.LString(from.Server)} },
			func(v lua.LValue) (*mcp.ElicitResult, error) { return elicitResult(v, p) })
		if !errors.Is(err, ask.ErrNoAnswer) {
			return res, err
		}
	}
	if pr := a.r.opts.Prompter; pr != nil {
		return pr.Elicit(ctx, from, p)
	}
	return nil, ask.ErrNoAnswer
}

// CreateMessage asks the sampling handler.
func (a *answerer) CreateMessage(ctx context.Context, from ask.From, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if !a.handles(ask.Sampling) {
		return nil, ask.ErrNoAnswer
	}
	return askLua(a.r, ctx, ask.Sampling, from,
		func(L *lua.LState) []lua.LValue { return []lua.LValue{samplingTable(L, p), lua.LString(from.Server)} },
		samplingResult)
}

// ListRoots asks the roots handler, else gives the host's roots.
func (a *answerer) ListRoots(ctx context.Context, from ask.From) ([]*mcp.Root, error) {
	if a.handles(ask.Roots) {
		roots, err := askLua(a.r, ctx, ask.Roots, from,
			func(L *lua.LState) []lua.LValue { return []lua.LValue{lua.LString(from.Server)} },
			handlerRoots)
		if !errors.Is(err, ask.ErrNoAnswer) {
			return roots, err
		}
	}
	if snap := a.r.rootsSnap.Load(); snap != nil {
		return cloneRoots(*snap), nil
	}
	return nil, ask.ErrNoAnswer
}

func (a *answerer) handles(kind ask.Kind) bool {
	return ask.Kind(a.r.handled.Load())&kind != 0
}

// cloneRoots copies roots deeply: the manager may keep or change what it
// is given.
func cloneRoots(roots []*mcp.Root) []*mcp.Root {
	out := make([]*mcp.Root, len(roots))
	for i, r := range roots {
		c := *r
		out[i] = &c
	}
	return out
}

// handlerRoots is what a roots handler returned: a list like mcp_roots
// takes.
func handlerRoots(v lua.LValue) ([]*mcp.Root, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("it must return a list of roots (like mcp_roots takes), nil to pass, or nil, err; got %s", v.Type())
	}
	return rootList(t)
}

// errPassed is the handler declining to answer (it returned nothing):
// the next answerer tries.
var errPassed = fmt.Errorf("%w: the Lua handler returned nothing", ask.ErrNoAnswer)

// askLua runs the handler of kind for a request from `from` as a budgeted
// task on the loop, bounded by ctx, and converts its first value with
// convert (on the loop). It returns an error wrapping ask.ErrNoAnswer when
// there is no handler by the time the loop gets to it, when the handler
// returned nothing, or when the runtime is closed; a *HandlerError when the
// handler failed.
func askLua[T any](r *Runtime, ctx context.Context, kind ask.Kind, from ask.From,
	args func(L *lua.LState) []lua.LValue, convert func(lua.LValue) (T, error)) (T, error) {
	type outcome struct {
		v       T
		err     error
		handler string
	}
	var zero T
	o, err := fromOutside(r, ctx, func(reply func(outcome)) {
		h := r.handlers[kind]
		switch {
		case r.closing:
			reply(outcome{err: fmt.Errorf("%w: the Lua runtime is closing", ask.ErrNoAnswer)})
			return
		case h == nil:
			reply(outcome{err: fmt.Errorf("%w: no Lua handler for %s", ask.ErrNoAnswer, kind)})
			return
		}
		r.spawnWith(ctx, h.fn, args(r.state), taskOptions{budget: r.opts.SliceBudget, origin: h.origin}, func(vals []lua.LValue, err error) {
			o := outcome{handler: h.name()}
			o.v, o.err = handlerValue(vals, err, convert)
			if o.err != nil && !errors.Is(o.err, ask.ErrNoAnswer) && ctx.Err() == nil && r.base.Err() == nil {
				r.reportHandlerFailure(h, from, o.err)
			}
			reply(o)
		})
	})
	switch {
	case errors.Is(err, errClosed):
		return zero, fmt.Errorf("%w: the Lua runtime is closed", ask.ErrNoAnswer)
	case err != nil:
		return zero, &HandlerError{Kind: kind, Server: from.Server, Handler: fmt.Sprintf("mcp_handle(%q)", kind.String()),
			Err: fmt.Errorf("no answer before the request ended: %w", err)}
	case o.err != nil && !errors.Is(o.err, ask.ErrNoAnswer):
		return zero, &HandlerError{Kind: kind, Server: from.Server, Handler: o.handler, Err: o.err}
	}
	return o.v, o.err
}

// handlerValue reads what a handler's task ended with: its error, nil,
// err (an error), nothing (errPassed), or a value to convert.
func handlerValue[T any](vals []lua.LValue, err error, convert func(lua.LValue) (T, error)) (T, error) {
	var zero T
	if err != nil {
		return zero, err
	}
	first, second := lua.LValue(lua.LNil), lua.LValue(lua.LNil)
	if len(vals) > 0 {
		first = vals[0]
	}
	if len(vals) > 1 {
		second = vals[1]
	}
	if first == lua.LNil {
		if second != lua.LNil {
			return zero, errors.New(errorText(second))
		}
		return zero, errPassed
	}
	return convert(first)
}

// reportHandlerFailure publishes hook_error for a handler that failed, with
// its traceback: the server gets the message, the person the stack.
func (r *Runtime) reportHandlerFailure(h *askHandler, from ask.From, err error) {
	p := HookError{Hook: h.name(), Error: err.Error(), Client: from.Client}
	var le *Error
	if errors.As(err, &le) {
		p.Traceback = le.Traceback
	}
	r.bus.Emit(from.Server, "", p)
}
