package luaapi

import (
	"fmt"
	"slices"

	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// Answering is how the runtime answers what servers ask of their client
// (elicitation, sampling, roots): [New] hands the manager the runtime's
// answerer once, and the runtime says when the host's roots changed
// (mcp_roots), from a goroutine of its own, never from the loop.
type Answering interface {
	SetAnswerer(a ask.Answerer)
	RootsChanged()
}

// askKinds are the kinds mcp_handle takes, in the order they are applied.
var askKinds = []ask.Kind{ask.Elicitation, ask.Sampling, ask.Roots}

// askHandler is one mcp_handle: the Lua function answering a kind of
// request. Owned by the loop.
type askHandler struct {
	kind  ask.Kind
	fn    *lua.LFunction // nil in a config's declarations: remove the handler
	where string         // "startup.lua:4", for the errors servers get
	// origin is the config generation that set it, 0 for the REPL and
	// other code outside the config: a reload that no longer sets it
	// removes only a handler the config (or its callbacks) set.
	origin int
}

// name is how errors name the handler: mcp_handle("sampling") at
// startup.lua:4.
func (h *askHandler) name() string {
	if h.where == "" {
		return fmt.Sprintf("mcp_handle(%q)", h.kind.String())
	}
	return fmt.Sprintf("mcp_handle(%q) at %s", h.kind.String(), h.where)
}

// mcp_handle(kind, fn) sets the Lua function that answers the requests of
// one kind servers send their client: "elicitation" and "sampling" call
// fn(req, server), "roots" calls fn(server); mcp_handle(kind, nil) removes
// it. The handler runs as a task under the hooks' rules (a time budget per
// slice, it may wait) and within the request's own time limit. In the
// config file it takes effect once the whole file has run and goes with a
// reload that no longer sets it; elsewhere at once.
func (r *Runtime) luaHandle(L *lua.LState) int {
	name := L.CheckString(1)
	kind, ok := ask.ParseKind(name)
	if !ok {
		L.ArgError(1, fmt.Sprintf("unknown kind %q; mcp_handle takes \"elicitation\", \"sampling\" or \"roots\"", name))
	}
	h := &askHandler{kind: kind, where: declaredAt(L)}
	switch fn := L.Get(2).(type) {
	case *lua.LFunction:
		h.fn = fn
	case *lua.LNilType:
	default:
		L.ArgError(2, fmt.Sprintf("function expected (%s), or nil to remove the handler, got %s", handlerSignature(kind), fn.Type()))
	}
	t, inTask := r.tasks[L]
	if inTask && t.config != nil {
		want := t.config
		if prev, dup := want.handlers[kind]; dup {
			L.RaiseError("INVALID_CONFIG: mcp_handle(%q) is set twice in %s (first at %s); set each kind once", name, want.file, prev.where)
		}
		want.handlers[kind] = h
		return 0
	}
	if inTask {
		h.origin = t.origin // set by a callback of the config: goes with it
	}
	r.setHandler(kind, h)
	return 0
}

// handlerSignature is how the handler of kind is called, for errors.
func handlerSignature(kind ask.Kind) string {
	if kind == ask.Roots {
		return "function(server)"
	}
	return "function(req, server)"
}

// setHandler puts h in force for kind, or removes the handler when h has
// no function.
func (r *Runtime) setHandler(kind ask.Kind, h *askHandler) {
	if h == nil || h.fn == nil {
		delete(r.handlers, kind)
	} else {
		r.handlers[kind] = h
	}
	r.publishOffers()
}

// publishOffers refreshes what the answerer reads off the loop: the kinds
// with a handler.
func (r *Runtime) publishOffers() {
	var k ask.Kind
	for kind := range r.handlers {
		k |= kind
	}
	r.handled.Store(uint32(k))
}

// rootsDecl is an mcp_roots call in a config evaluation.
type rootsDecl struct {
	roots []*mcp.Root
	where string
}

// hostRoots are the host's roots in force. Owned by the loop.
type hostRoots struct {
	list   []*mcp.Root
	origin int // as askHandler.origin
}

// mcp_roots(list) sets the host's roots, the directories servers are told
// they may work in: each a "file:///abs/path" or {uri = …, name = …};
// mcp_roots{} clears them. mcp_roots() returns them as a list of {uri,
// name}. In the config file the list takes effect once the whole file has
// run and is cleared by a reload that no longer sets it.
func (r *Runtime) luaRoots(L *lua.LState) int {
	t, inTask := r.tasks[L]
	var want *desired
	if inTask {
		want = t.config
	}
	if L.GetTop() == 0 || L.Get(1) == lua.LNil {
		list := r.roots.list
		if want != nil && want.roots != nil {
			list = want.roots.roots
		}
		return pushList(L, list, rootTable)
	}
	tbl, ok := L.Get(1).(*lua.LTable)
	if !ok {
		L.ArgError(1, "a list of roots expected, like {\"file:///home/me/project\", {uri = \"file:///srv\", name = \"srv\"}}, got "+L.Get(1).Type().String())
	}
	roots, err := rootList(tbl)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	if want != nil {
		if want.roots != nil {
			L.RaiseError("INVALID_CONFIG: mcp_roots is set twice in %s (first at %s); give all the roots in one list", want.file, want.roots.where)
		}
		want.roots = &rootsDecl{roots: roots, where: declaredAt(L)}
		return 0
	}
	origin := 0
	if inTask {
		origin = t.origin
	}
	r.setRoots(roots, origin)
	return 0
}

func rootTable(L *lua.LState, root *mcp.Root) *lua.LTable {
	t := L.CreateTable(0, 2)
	t.RawSetString("uri", lua.LString(root.URI))
	setString(t, "name", root.Name)
	return t
}

// setRoots puts roots in force and, when they differ from those in force,
// has the manager tell the servers.
func (r *Runtime) setRoots(roots []*mcp.Root, origin int) {
	r.roots.origin = origin
	if slices.EqualFunc(roots, r.roots.list, func(a, b *mcp.Root) bool { return a.URI == b.URI && a.Name == b.Name }) {
		return
	}
	r.roots.list = roots
	if len(roots) == 0 {
		r.rootsSnap.Store(nil)
	} else {
		snap := slices.Clone(roots)
		r.rootsSnap.Store(&snap)
	}
	r.rootsNote.poke()
}

// applyAsk makes the handlers and roots match what the config declares:
// what it sets replaces what is in force, and what an earlier config (or
// its callbacks) set and this one no longer does goes. Handlers and roots
// set at the REPL stay unless the config sets the same.
func (r *Runtime) applyAsk(want *desired) {
	for _, kind := range askKinds {
		h, declared := want.handlers[kind]
		cur := r.handlers[kind]
		switch {
		case declared:
			h.origin = want.gen
			r.setHandler(kind, h)
		case cur != nil && cur.origin != 0 && cur.origin < want.gen:
			r.setHandler(kind, nil)
		}
	}
	switch {
	case want.roots != nil:
		r.setRoots(want.roots.roots, want.gen)
	case r.roots.origin != 0 && r.roots.origin < want.gen:
		r.setRoots(nil, 0)
	}
}
