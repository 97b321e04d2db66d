package luaapi

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// install defines the Lua control plane's globals (mcp_add … mcp_hud_model,
// json, MCPVISOR, print) and the same functions as the module table `mcp`
// (mcp.call == mcp_call).
func (r *Runtime) install() {
	L := r.state
	OpenJSON(L)
	L.SetGlobal("print", L.NewFunction(luaPrint(r.out)))
	L.SetGlobal("MCPVISOR", lua.LString(r.opts.Binary))
	mod := L.NewTable()
	for name, fn := range map[string]lua.LGFunction{
		"add":         r.luaAdd,
		"status":      r.luaStatus,
		"servers":     r.luaServers,
		"tools":       r.luaTools,
		"events":      r.luaEvents,
		"resources":   r.luaResources,
		"prompts":     r.luaPrompts,
		"on":          r.luaOn,
		"off":         r.luaOff,
		"after":       r.luaAfter,
		"every":       r.luaEvery,
		"import":      r.luaImport,
		"reconnect":   r.luaReconnect,
		"enable":      r.luaEnable,
		"disable":     r.luaDisable,
		"metrics":     r.luaMetrics,
		"hud":         r.luaHUD,
		"hud_model":   r.luaHUDModel,
		"toolset":     r.luaToolset,
		"name_budget": r.luaNameBudget,
		"client_mode": r.luaClientMode,
		"clients":     r.luaClients,
		"tool":        r.luaTool,
		"handle":      r.luaHandle,
		"roots":       r.luaRoots,
	} {
		f := L.NewFunction(fn)
		mod.RawSetString(name, f)
		L.SetGlobal("mcp_"+name, f)
	}
	L.SetGlobal("mcp", mod)

	// Builtins that may suspend the task are wrapped in Lua shims with a
	// fixed number of results: the task is always resumed with exactly that
	// many values, whatever the caller's own call site expects: gopher-lua
	// resumed with fewer values than the yield site expects leaves nil
	// registers that crash later.
	raw := L.NewTable()
	raw.RawSetString("call", L.NewFunction(r.luaCall))
	raw.RawSetString("wait", L.NewFunction(r.luaWait))
	raw.RawSetString("login", L.NewFunction(r.luaLogin))
	raw.RawSetString("remove", L.NewFunction(r.luaRemove))
	raw.RawSetString("sleep", L.NewFunction(r.luaSleep))
	raw.RawSetString("read", L.NewFunction(r.luaRead))
	raw.RawSetString("prompt", L.NewFunction(r.luaPrompt))
	raw.RawSetString("discover", L.NewFunction(r.luaDiscover))
	raw.RawSetString("call_cb", L.NewFunction(r.luaCallCB))
	raw.RawSetString("serve", L.NewFunction(r.luaServe))
	shims, err := L.Load(stringReader(shimSource), shimChunk)
	if err != nil {
		panic(err) // shimSource is a constant
	}
	L.Push(shims)
	L.Push(raw)
	L.Push(mod)
	L.Call(2, 0)
}

// shimSource defines the suspending builtins over their raw Go versions.
const shimSource = `local raw, mod = ...
-- assert as in Lua 5.3: any error value passes through, so
-- assert(mcp_call(...)) raises the call's error ("TOOL_NOT_FOUND: ...").
local error, select = error, select
function assert(...)
  local v, msg = ...
  if v then return ... end
  if select("#", ...) < 2 then error("assertion failed!", 3) end
  error(msg, 0)
end
local call, wait, remove, sleep_ = raw.call, raw.wait, raw.remove, raw.sleep
local function ret(a, b) if b == nil then return a end return a, b end
function mcp_call(...) local a, b = call(...) return ret(a, b) end
function mcp_wait(...) local a, b = wait(...) return ret(a, b) end
function mcp_remove(...) local a, b = remove(...) return ret(a, b) end
function sleep(...) sleep_(...) end
local read, prompt, discover = raw.read, raw.prompt, raw.discover
function mcp_read(...) local a, b = read(...) return ret(a, b) end
function mcp_prompt(...) local a, b = prompt(...) return ret(a, b) end
function mcp_discover(...) local a, b = discover(...) return a, b end
mod.call, mod.wait, mod.remove, mod.sleep = mcp_call, mcp_wait, mcp_remove, sleep
local call_cb = raw.call_cb
function mcp_call_cb(...) local a = call_cb(...) return a end
mod.read, mod.prompt, mod.discover, mod.call_cb = mcp_read, mcp_prompt, mcp_discover, mcp_call_cb
local serve = raw.serve
function mcp_serve(...) local a, b = serve(...) return ret(a, b) end
mod.serve = mcp_serve
local login = raw.login
function mcp_login(...) local a, b = login(...) return ret(a, b) end
mod.login = mcp_login
`

// shimChunk names the shims' chunk; tracebacks leave its frames out.
const shimChunk = "(mcp)"

// shimLevel is the error level, inside a shimmed builtin, of the Lua code
// that called the shim: errors point at the user's line, not the shim's.
const shimLevel = 3

// raiseAt raises a Lua error positioned at the caller of a shimmed builtin.
func raiseAt(L *lua.LState, format string, args ...any) {
	L.Error(lua.LString(callerPosition(L)+fmt.Sprintf(format, args...)), 0)
}

// callerPosition is "chunk:line: " of the Lua code that called a shimmed
// builtin, or "" when a tail call (`return mcp_call(…)`, the REPL's form)
// has erased that frame: gopher-lua's GetStack then lands on the task's
// bootstrap, whose position means nothing to the user.
func callerPosition(L *lua.LState) string {
	for level := shimLevel - 1; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return ""
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			return ""
		}
		switch {
		case dbg.What == "G":
			continue // like lua_error's level: skip Go frames
		case dbg.Source == taskChunk:
			return ""
		}
		return fmt.Sprintf("%s:%d: ", dbg.Source, dbg.CurrentLine)
	}
}

// argErr is ArgError for shimmed builtins.
func argErr(L *lua.LState, fname string, n int, msg string) {
	raiseAt(L, "bad argument #%d to %s (%s)", n, fname, msg)
}

// checkString is CheckString for shimmed builtins.
func checkString(L *lua.LState, fname string, n int) string {
	s, ok := L.Get(n).(lua.LString)
	if !ok {
		argErr(L, fname, n, "string expected, got "+L.Get(n).Type().String())
	}
	return string(s)
}

// checkNumber is CheckNumber for shimmed builtins.
func checkNumber(L *lua.LState, fname string, n int) lua.LNumber {
	v, ok := L.Get(n).(lua.LNumber)
	if !ok {
		argErr(L, fname, n, "number expected, got "+L.Get(n).Type().String())
	}
	return v
}

// Servers declares servers and takes them away: mcp_add, mcp_remove and
// the config file. Its methods are called on the loop and must return at
// once.
type Servers interface {
	// Add declares a server; its connection is made in the background.
	Add(name string, spec manager.Spec) error
	// Remove takes a server away; the channel is closed once it is
	// disposed of.
	Remove(name string) (<-chan struct{}, error)
	// Spec is the spec a server was declared with.
	Spec(name string) (manager.Spec, error)
}

// Observer reports the servers' states: mcp_status, mcp_servers, mcp_wait
// and the checks other builtins make before acting. Wait is called off the
// loop and may block until ctx ends; the others are called on the loop
// (and Names also by [Runtime.Complete]) and must return at once.
type Observer interface {
	Status(name string) (manager.Status, error)
	Statuses() []manager.Status
	Names() []string
	Wait(ctx context.Context, name string, state manager.State) (manager.Status, error)
}

// Toolbox lists and calls the servers' tools: mcp_tools, mcp_call,
// mcp_call_cb and mcp_discover. Call and Discover are called off the loop
// and may block until ctx ends; Tools is called on the loop (and by
// [Runtime.Complete]) and must return at once. A progress function given
// to Call only posts to the loop, so it may be called from any goroutine.
type Toolbox interface {
	Tools(server string) ([]manager.ToolInfo, error)
	Call(ctx context.Context, name string, args any, opts manager.CallOptions) (*mcp.CallToolResult, error)
	Discover(ctx context.Context, server string, force bool) ([]manager.ToolInfo, map[string]error, error)
}

// mcp_add(name, spec) → name. Records intent and returns at once; an
// invalid spec or a name conflict raises a Lua error naming the server and
// field.
func (r *Runtime) luaAdd(L *lua.LState) int {
	name := L.CheckString(1)
	specTable := L.CheckTable(2)
	raw, err := FromLua(specTable)
	if err != nil {
		L.RaiseError("mcp_add(%q): spec: %v", name, err)
	}
	fields, ok := raw.(map[string]any)
	if !ok {
		L.RaiseError("mcp_add(%q): spec must be a table of named fields like {command = {\"prog\"}}", name)
	}
	spec, err := config.DecodeSpec(name, fields, config.DecodeOptions{LookupEnv: r.opts.LookupEnv})
	if err != nil {
		raiseCoded(L, err)
	}
	L.Push(lua.LString(r.addSpec(L, name, spec, "")))
	return 1
}

// addSpec declares a decoded server: into the desired set while the config
// file is evaluated (LoadConfig applies the set), else to the manager at
// once. It returns the server's name.
func (r *Runtime) addSpec(L *lua.LState, name string, spec manager.Spec, from string) string {
	if t, ok := r.tasks[L]; ok && t.config != nil {
		return r.declare(L, t.config, name, spec, from)
	}
	if err := r.servers.Add(name, spec); err != nil {
		raiseCoded(L, err)
	}
	// The server's own name: "GIT" re-declaring an identical "git" is a
	// no-op that returns "git".
	if st, err := r.observer.Status(name); err == nil {
		name = st.Name
	}
	return name
}

// mcp_remove(name [, {wait = true}]) → true | nil, err. Non-blocking unless
// wait is set, in which case it returns once the server is fully disposed.
func (r *Runtime) luaRemove(L *lua.LState) int {
	name := checkString(L, "mcp_remove", 1)
	wait := optBool(L, 2, "wait")
	if wait {
		// Refuse before removing: raising after would hide that it happened.
		r.checkSuspend(L, "mcp_remove")
	}
	done, err := r.servers.Remove(name)
	if err != nil {
		return pushErr(L, err)
	}
	if !wait {
		L.Push(lua.LTrue)
		return 1
	}
	return r.await(L, "mcp_remove", 2, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		select {
		case <-done:
			return func(*lua.LState) []lua.LValue { return []lua.LValue{lua.LTrue} }
		case <-ctx.Done():
			return func(L *lua.LState) []lua.LValue {
				return []lua.LValue{lua.LNil, lua.LString("interrupted while waiting for removal")}
			}
		}
	})
}

// mcp_status([name]) → status | nil, err; without a name, a table of all
// statuses by server name.
func (r *Runtime) luaStatus(L *lua.LState) int {
	if L.GetTop() == 0 || L.Get(1) == lua.LNil {
		all := L.NewTable()
		for _, st := range r.observer.Statuses() {
			all.RawSetString(st.Name, statusTable(L, st))
		}
		L.Push(all)
		return 1
	}
	st, err := r.observer.Status(L.CheckString(1))
	if err != nil {
		return pushErr(L, err)
	}
	L.Push(statusTable(L, st))
	return 1
}

// mcp_servers() → sorted list of names.
func (r *Runtime) luaServers(L *lua.LState) int {
	var names []lua.LValue
	for _, n := range r.observer.Names() {
		names = append(names, lua.LString(n))
	}
	L.Push(listTable(L, names))
	return 1
}

// mcp_tools([server]) → list of tools | nil, err. Each tool's tokens is
// what its definition costs a model when listed, once counted: counting
// is too slow for the loop (the vocabulary loads on the first count; a
// long description takes a while), so what is not counted yet is left
// out here and counted in the background for the next call.
// mcp_discover, which waits anyway, always counts.
func (r *Runtime) luaTools(L *lua.LState) int {
	tools, err := r.toolbox.Tools(L.OptString(1, ""))
	if err != nil {
		return pushErr(L, err)
	}
	list := make([]lua.LValue, len(tools))
	uncounted := false
	for i, ti := range tools {
		t := toolTable(L, ti)
		if ti.Tool != nil {
			if n, ok := r.costs.Counted(ti.Tool); ok {
				t.RawSetString("tokens", lua.LNumber(n))
			} else {
				uncounted = true
			}
		}
		list[i] = t
	}
	if uncounted {
		r.countLater(tools)
	}
	L.Push(listTable(L, list))
	return 1
}

// countLater counts tools' costs on a goroutine of their own, one such
// count at a time; the loop calls it.
func (r *Runtime) countLater(tools []manager.ToolInfo) {
	if r.closing || !r.counting.CompareAndSwap(false, true) {
		return
	}
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		defer r.counting.Store(false)
		for _, ti := range tools {
			if r.base.Err() != nil {
				return // closing
			}
			if ti.Tool != nil {
				r.costs.Tool(ti.Tool)
			}
		}
	}()
}

// toolCosts counts what each tool's definition costs in tokens, off the
// loop.
func (r *Runtime) toolCosts(tools []manager.ToolInfo) []int {
	costs := make([]int, len(tools))
	for i, ti := range tools {
		if ti.Tool != nil {
			costs[i] = r.costs.Tool(ti.Tool)
		}
	}
	return costs
}

// mcp_call(name, args [, {timeout = seconds}]) → result | nil, err. Looks
// blocking to its caller; the loop keeps running meanwhile.
func (r *Runtime) luaCall(L *lua.LState) int {
	const fname = "mcp_call"
	name, args := callArgs(L, fname)
	opts := manager.CallOptions{Timeout: optSeconds(L, fname, 3, "timeout"), Progress: r.progressFunc(L, fname, 3)}
	if server, pending := r.pendingServer(L, name); pending {
		return pushErr(L, pendingError(server, "call"))
	}
	return r.await(L, fname, 2, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		res, err := r.toolbox.Call(ctx, name, args, opts)
		return func(L *lua.LState) []lua.LValue { return callResult(L, res, err) }
	})
}

// mcp_call_cb(name, args, fn [, opts]) → true. For places that cannot
// suspend (pcall, callbacks): the call runs in the background and fn(result,
// err) runs later as its own task, with the slice budget of a hook.
func (r *Runtime) luaCallCB(L *lua.LState) int {
	const fname = "mcp_call_cb"
	name, args := callArgs(L, fname)
	fn, ok := L.Get(3).(*lua.LFunction)
	if !ok {
		argErr(L, fname, 3, "function(result, err) expected, got "+L.Get(3).Type().String())
	}
	opts := manager.CallOptions{Timeout: optSeconds(L, fname, 4, "timeout")}
	if r.closing {
		raiseAt(L, "%s: the Lua runtime is closing", fname)
	}
	cb := &callback{what: fmt.Sprintf("mcp_call_cb(%q)", name), fn: fn}
	if t, ok := r.tasks[L]; ok {
		cb.origin = t.origin // what the callback registers belongs to the same config
	}
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		res, err := r.toolbox.Call(r.base, name, args, opts)
		r.postAsync(func() {
			if r.closing {
				return
			}
			r.run(cb, callResult(r.state, res, err))
		})
	}()
	L.Push(lua.LTrue)
	return 1
}

// callArgs reads mcp_call's name and argument table.
func callArgs(L *lua.LState, fname string) (string, any) {
	name := checkString(L, fname, 1)
	var args any = map[string]any{}
	if v := L.Get(2); v != lua.LNil {
		tbl, ok := v.(*lua.LTable)
		if !ok {
			argErr(L, fname, 2, "arguments must be a table like {text = \"hi\"}, got "+v.Type().String())
		}
		a, err := FromLua(tbl)
		if err != nil {
			argErr(L, fname, 2, err.Error())
		}
		if _, isList := a.([]any); isList {
			argErr(L, fname, 2, "arguments must be a table of named fields, not a list")
		}
		args = a
	}
	return name, args
}

// callResult is what mcp_call returns: result, nil or nil, err.
func callResult(L *lua.LState, res *mcp.CallToolResult, err error) []lua.LValue {
	if err != nil {
		return []lua.LValue{lua.LNil, errorTable(L, err)}
	}
	return []lua.LValue{resultTable(L, res), lua.LNil}
}

// mcp_wait(name, state [, timeout_seconds = 10]) → true | false, why.
func (r *Runtime) luaWait(L *lua.LState) int {
	const fname = "mcp_wait"
	name := checkString(L, fname, 1)
	state, err := manager.ParseState(checkString(L, fname, 2))
	if err != nil {
		argErr(L, fname, 2, err.Error())
	}
	timeout := 10 * time.Second
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		timeout = seconds(L, fname, 3, checkNumber(L, fname, 3))
	}
	if server, pending := r.pendingServer(L, name); pending {
		L.Push(lua.LFalse)
		L.Push(lua.LString(pendingError(server, "wait").Error()))
		return 2
	}
	if _, err := r.observer.Status(name); err != nil {
		L.Push(lua.LFalse)
		L.Push(lua.LString(luaErrorText(err)))
		return 2
	}
	return r.await(L, "mcp_wait", 2, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := r.observer.Wait(ctx, name, state)
		return func(*lua.LState) []lua.LValue {
			if err != nil {
				return []lua.LValue{lua.LFalse, lua.LString(luaErrorText(err))}
			}
			return []lua.LValue{lua.LTrue, lua.LNil}
		}
	})
}

// mcp_events([n = 50]) → the last n events, oldest first.
func (r *Runtime) luaEvents(L *lua.LState) int {
	return pushList(L, r.bus.History(L.OptInt(1, 50)), eventTable)
}

// sleep(seconds) suspends the task; the loop keeps running.
func (r *Runtime) luaSleep(L *lua.LState) int {
	d := seconds(L, "sleep", 1, checkNumber(L, "sleep", 1))
	return r.await(L, "sleep", 0, func(ctx context.Context) func(*lua.LState) []lua.LValue {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return func(*lua.LState) []lua.LValue { return nil }
	})
}

// pushErr returns nil, err to Lua.
func pushErr(L *lua.LState, err error) int {
	L.Push(lua.LNil)
	L.Push(errorTable(L, err))
	return 2
}

// raiseCoded raises err as a Lua error "CODE: message".
func raiseCoded(L *lua.LState, err error) {
	L.RaiseError("%s", errTableString(errorTable(L, err)))
}

func optBool(L *lua.LState, n int, key string) bool {
	t, ok := L.Get(n).(*lua.LTable)
	return ok && lua.LVAsBool(t.RawGetString(key))
}

// optSeconds reads opts[key] as seconds; absent is zero.
func optSeconds(L *lua.LState, fname string, n int, key string) time.Duration {
	v := L.Get(n)
	if v == lua.LNil {
		return 0
	}
	t, ok := v.(*lua.LTable)
	if !ok {
		argErr(L, fname, n, "options must be a table like {"+key+" = 5}")
	}
	switch x := t.RawGetString(key).(type) {
	case lua.LNumber:
		return seconds(L, fname, n, x)
	case *lua.LNilType:
		return 0
	default:
		argErr(L, fname, n, fmt.Sprintf("%s must be a number of seconds, got %s", key, x.Type()))
	}
	return 0
}

func seconds(L *lua.LState, fname string, n int, v lua.LNumber) time.Duration {
	if v < 0 || v > 1e6 || v != v {
		argErr(L, fname, n, fmt.Sprintf("seconds must be within 0..1000000, got %v", v))
	}
	return time.Duration(float64(v) * float64(time.Second))
}
