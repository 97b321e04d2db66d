package luaapi

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	lua "github.com/yuin/gopher-lua"
)

// maxHookFailures is how many failures in a row disable a hook or timer.
const maxHookFailures = 10

// callback is a Lua function the loop calls on its own: a hook (mcp_on), a
// timer (mcp_after, mcp_every). Owned by the loop goroutine.
type callback struct {
	id       int
	what     string // "mcp_on(\"connected\")", "mcp_every(5)": for errors
	fn       *lua.LFunction
	origin   int // config generation that registered it; 0 = REPL or other
	failures int
	off      bool

	// hooks
	kind   string // event kind or "*"
	server string // lower-cased server filter, or ""

	// timers
	every time.Duration // zero for mcp_after
	timer *time.Timer
}

// matches reports whether hook h wants e.
func (h *callback) matches(e events.Event) bool {
	if h.off {
		return false
	}
	if e.Kind == events.KindHookError && e.Int("hook_id") == int64(h.id) {
		return false // never feed a hook its own failures
	}
	switch {
	case h.kind == "*":
		if e.Kind == events.KindHookError {
			return false // "*" hooks would otherwise feed on each other's failures
		}
	case h.kind != string(e.Kind):
		return false
	}
	return h.server == "" || strings.EqualFold(h.server, e.Server)
}

// eventBatch bounds how many events one turn of the loop dispatches, so a
// storm of events does not keep chunks and timers waiting.
const eventBatch = 256

// drainEvents dispatches queued events to the hooks, on the loop. The loop
// reads the bus itself: no goroutine hand-off between an event and its
// hooks.
func (r *Runtime) drainEvents() {
	defer r.refilterAll() // once per batch, however many tools changed
	for range eventBatch {
		e, ok, err := r.sub.TryRecv()
		if !ok || err != nil {
			return
		}
		r.hud.Apply(e)
		r.toolsStale = r.toolsStale || changesTools(e)
		r.dispatch(e)
	}
	r.postAsync(r.drainEvents) // more queued: continue after other work
}

// drainNotices dispatches queued notices (what servers said) to the hooks
// as the notification events they render as, on the loop; a report of
// notices lost is a lagged event. They are not the bus's: no sequence
// number, and the HUD has no use for them.
func (r *Runtime) drainNotices() {
	for range eventBatch {
		n, ok, err := r.notes.TryNext()
		if !ok || err != nil {
			return
		}
		o := n.From()
		r.dispatch(events.Event{Time: o.Time, Kind: n.Kind(), Server: o.Server, Fields: n.Fields()})
	}
	r.postAsync(r.drainNotices) // more queued: continue after other work
}

// dispatch runs every hook that wants e, each as its own task with the
// slice budget.
func (r *Runtime) dispatch(e events.Event) {
	if len(r.hooks) == 0 || r.closing {
		return
	}
	var ev *lua.LTable
	for _, h := range r.hooks {
		if !h.matches(e) {
			continue
		}
		if ev == nil {
			ev = eventTable(r.state, e)
		}
		r.run(h, []lua.LValue{ev})
	}
}

// run calls a hook or timer function as a budgeted task and accounts for
// its failures. The task has the callback's origin, so what it registers
// belongs to the same config generation (and goes with it on reload).
func (r *Runtime) run(cb *callback, args []lua.LValue) {
	r.spawnWith(r.base, cb.fn, args, taskOptions{budget: r.opts.SliceBudget, origin: cb.origin}, func(_ []lua.LValue, err error) {
		if err == nil {
			cb.failures = 0
			return
		}
		if r.base.Err() != nil {
			return // shutting down
		}
		cb.failures++
		disable := cb.failures >= maxHookFailures && !cb.off
		r.reportFailure(cb, err, disable)
		if disable {
			r.unregister(cb)
		}
	})
}

// reportFailure publishes hook_error with the traceback (the log
// subscriber logs it); the manager never sees Lua failures.
func (r *Runtime) reportFailure(cb *callback, err error, disabled bool) {
	p := HookError{Hook: cb.what, HookID: cb.id, Error: err.Error(), Failures: cb.failures, Disabled: disabled}
	if le, ok := err.(*Error); ok {
		p.Traceback = le.Traceback
	}
	r.bus.Emit("", "", p)
}

// register adds a hook or timer owned by the running task's origin and
// returns its handle table.
func (r *Runtime) register(L *lua.LState, cb *callback) *lua.LTable {
	r.nextID++
	cb.id = r.nextID
	if t, ok := r.tasks[L]; ok {
		cb.origin = t.origin
	}
	if cb.timer == nil && cb.kind != "" {
		r.hooks = append(r.hooks, cb)
		r.askForCalls()
	} else {
		r.timers[cb.id] = cb
	}
	h := L.NewTable()
	h.RawSetString("id", lua.LNumber(cb.id))
	h.RawSetString("what", lua.LString(cb.what))
	mt := L.NewTable()
	what := fmt.Sprintf("%s#%d", cb.what, cb.id)
	mt.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString(what))
		return 1
	}))
	h.Metatable = mt
	return h
}

// unregister turns a hook or timer off for good.
func (r *Runtime) unregister(cb *callback) {
	cb.off = true
	if cb.timer != nil {
		cb.timer.Stop()
	}
	delete(r.timers, cb.id)
	for i, h := range r.hooks {
		if h == cb {
			r.hooks = append(r.hooks[:i:i], r.hooks[i+1:]...)
			r.askForCalls()
			break
		}
	}
}

// askForCalls tells the bus whether the loop's subscription asks for
// tool calls: only while a hook takes them (mcp_on("tool_call") or "*").
// Otherwise it takes them passively, and a call that went well publishes
// nothing (see events.Bus.Wants); failed calls still come.
func (r *Runtime) askForCalls() {
	want := false
	for _, h := range r.hooks {
		if h.kind == "*" || h.kind == string(events.KindToolCall) {
			want = true
			break
		}
	}
	if want == r.callsAsked {
		return
	}
	r.callsAsked = want
	if want {
		r.sub.SetPassive()
	} else {
		r.sub.SetPassive(events.KindToolCall)
	}
}

// dropOrigin removes every hook and timer registered by config
// generations in (0, keep) and keep's own when drop is set: how a reload
// replaces the old file's hooks with the new file's.
func (r *Runtime) dropOrigins(match func(origin int) bool) {
	var doomed []*callback
	for _, h := range r.hooks {
		if h.origin != 0 && match(h.origin) {
			doomed = append(doomed, h)
		}
	}
	for _, t := range r.timers {
		if t.origin != 0 && match(t.origin) {
			doomed = append(doomed, t)
		}
	}
	for _, cb := range doomed {
		r.unregister(cb)
	}
}

// mcp_on(kind | "*", fn [, {server = name}]) → handle. The hook gets each
// matching event as a table; it runs as its own task with a time budget per
// slice, may call mcp_call, and its failures are reported, not raised.
func (r *Runtime) luaOn(L *lua.LState) int {
	kind := L.CheckString(1)
	fn := L.CheckFunction(2)
	if kind != "*" && !knownKind(kind) {
		L.ArgError(1, fmt.Sprintf("unknown event kind %q; use \"*\" or one of: %s", kind, strings.Join(kindNames(), ", ")))
	}
	cb := &callback{what: fmt.Sprintf("mcp_on(%q)", kind), fn: fn, kind: kind}
	if opts, ok := L.Get(3).(*lua.LTable); ok {
		if s, ok := opts.RawGetString("server").(lua.LString); ok {
			cb.server = string(s)
			cb.what = fmt.Sprintf("mcp_on(%q, server=%q)", kind, cb.server)
		}
	}
	L.Push(r.register(L, cb))
	return 1
}

// mcp_off(handle) → true if it was on.
func (r *Runtime) luaOff(L *lua.LState) int {
	id := 0
	switch v := L.Get(1).(type) {
	case *lua.LTable:
		n, _ := v.RawGetString("id").(lua.LNumber)
		id = int(n)
	case lua.LNumber:
		id = int(v)
	default:
		L.ArgError(1, "handle expected (what mcp_on, mcp_after or mcp_every returned)")
	}
	for _, h := range r.hooks {
		if h.id == id {
			r.unregister(h)
			L.Push(lua.LTrue)
			return 1
		}
	}
	if t, ok := r.timers[id]; ok {
		r.unregister(t)
		L.Push(lua.LTrue)
		return 1
	}
	L.Push(lua.LFalse)
	return 1
}

// mcp_after(seconds, fn) → handle: run fn once, later.
func (r *Runtime) luaAfter(L *lua.LState) int { return r.startTimer(L, "mcp_after", false) }

// mcp_every(seconds, fn) → handle: run fn every interval until mcp_off.
func (r *Runtime) luaEvery(L *lua.LState) int { return r.startTimer(L, "mcp_every", true) }

func (r *Runtime) startTimer(L *lua.LState, name string, repeat bool) int {
	secs := L.CheckNumber(1)
	fn := L.CheckFunction(2)
	min := 0.0
	if repeat {
		min = 0.01
	}
	if float64(secs) < min || secs > 1e6 || secs != secs {
		L.ArgError(1, fmt.Sprintf("seconds must be within %g..1000000, got %v", min, secs))
	}
	d := time.Duration(float64(secs) * float64(time.Second))
	cb := &callback{what: fmt.Sprintf("%s(%g)", name, float64(secs)), fn: fn}
	if repeat {
		cb.every = d
	}
	cb.timer = time.AfterFunc(d, func() { r.postAsync(func() { r.fire(cb) }) })
	L.Push(r.register(L, cb))
	return 1
}

// fire runs a timer on the loop and re-arms it if it repeats.
func (r *Runtime) fire(cb *callback) {
	if cb.off || r.closing {
		return
	}
	if cb.every > 0 {
		cb.timer.Reset(cb.every)
	} else {
		r.unregister(cb)
	}
	r.run(cb, nil)
}

// stopTimers stops every timer; Close calls it on the loop.
func (r *Runtime) stopTimers() {
	for _, t := range r.timers {
		t.off = true
		t.timer.Stop()
	}
	clear(r.timers)
}

func knownKind(k string) bool {
	return slices.Contains(events.Kinds, events.Kind(k))
}

func kindNames() []string {
	names := make([]string, len(events.Kinds))
	for i, k := range events.Kinds {
		names[i] = string(k)
	}
	return names
}
