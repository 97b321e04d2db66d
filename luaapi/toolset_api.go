package luaapi

import (
	"fmt"
	"maps"
	"path"
	"slices"

	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/internal/expose"
)

// toolsetDecl is one mcp_toolset: patterns, or a Lua function deciding.
type toolsetDecl struct {
	name             string
	include, exclude []string
	mode             string         // "" for the gateway's default
	fn               *lua.LFunction // nil for patterns
	where            string
}

// toolsetEntry is a toolset in force. Owned by the loop.
type toolsetEntry struct {
	decl       toolsetDecl
	fromConfig bool    // declared by the config file, which removes it when it no longer declares it
	snap       Toolset // what the gateway has been handed, or is about to be; Version 0 before that
	filter     filterState
}

// mcp_toolset(name, {include = {"git.*"}, exclude = {…}, mode = "search"})
// or mcp_toolset(name, function(tool) return … end) → name. Declares the
// toolset the gateway serves at /toolsets/NAME/mcp: the tools whose
// "server.tool" matches an include pattern (every tool if there is none)
// and no exclude pattern, offered in mode ("direct", "search" or "code";
// serve --mode if unset, and mcp_client_mode may choose another for a
// client), or those the function returns true for (it gets
// the table mcp_tools gives for one tool, and is asked about every tool on
// the loop whenever the tools or the toolset change; the gateway serves
// its last answer). In the config file it takes effect once the whole file
// has run and goes with a reload that no longer declares it; elsewhere at
// once.
func (r *Runtime) luaToolset(L *lua.LState) int {
	const fname = "mcp_toolset"
	name := L.CheckString(1)
	if err := checkToolsetName(name); err != nil {
		L.ArgError(1, err.Error())
	}
	d := toolsetDecl{name: name, where: declaredAt(L)}
	switch spec := L.Get(2).(type) {
	case *lua.LFunction:
		d.fn = spec
	case *lua.LTable:
		spec.ForEach(func(k, v lua.LValue) {
			switch key := lua.LVAsString(k); key {
			case "include":
				d.include = patternList(L, name, key, v)
			case "exclude":
				d.exclude = patternList(L, name, key, v)
			case "mode":
				s, ok := v.(lua.LString)
				if !ok {
					L.ArgError(2, fmt.Sprintf("toolset %q: mode must be \"direct\", \"search\" or \"code\", got %s", name, v.Type()))
				}
				m, err := checkMode(string(s))
				if err != nil {
					L.ArgError(2, fmt.Sprintf("toolset %q: %v", name, err))
				}
				d.mode = m
			default:
				L.ArgError(2, fmt.Sprintf("unknown field %s; a toolset takes include, exclude and mode (or is a function(tool))", key))
			}
		})
	default:
		L.ArgError(2, "{include = {\"server.*\"}, exclude = {…}} or function(tool) expected, got "+L.Get(2).Type().String())
	}
	if t, ok := r.tasks[L]; ok && t.config != nil {
		want := t.config
		if r.opts.Gateway == nil && !want.checking {
			L.RaiseError("%s", noGateway(fname))
		}
		if prev, dup := want.toolsets[name]; dup {
			L.RaiseError("INVALID_CONFIG: toolset %q is declared twice in %s (first at %s); each name may be declared once", name, want.file, prev.where)
		}
		want.toolsets[name] = d
		L.Push(lua.LString(name))
		return 1
	}
	if r.opts.Gateway == nil {
		L.RaiseError("%s", noGateway(fname))
	}
	r.setToolset(d, false)
	if d.fn != nil {
		// Not from inside this builtin: the function runs as tasks of
		// their own, from the loop.
		r.postAsync(func() { r.refilter(name); r.flushToolsets() })
	}
	r.flushToolsets()
	L.Push(lua.LString(name))
	return 1
}

// checkToolsetName accepts what fits in the toolset's URL path segment.
func checkToolsetName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("toolset name must be 1 to 64 characters, got %q", name)
	}
	for _, c := range name {
		if !expose.Rune(c) && c != '.' {
			return fmt.Errorf("toolset name %q may hold only letters, digits, '_', '-' and '.' (it is served at /toolsets/NAME/mcp)", name)
		}
	}
	return nil
}

// patternList reads a list of path.Match patterns, raising on a pattern
// that could never match.
func patternList(L *lua.LState, toolset, field string, v lua.LValue) []string {
	t, ok := v.(*lua.LTable)
	if !ok {
		if s, isString := v.(lua.LString); isString {
			t = L.NewTable()
			t.Append(s)
		} else {
			L.ArgError(2, fmt.Sprintf("%s must be a list of patterns like {\"git.*\"}, got %s", field, v.Type()))
		}
	}
	var out []string
	for i := 1; i <= t.Len(); i++ {
		s, ok := t.RawGetInt(i).(lua.LString)
		if !ok {
			L.ArgError(2, fmt.Sprintf("%s[%d] must be a pattern string, got %s", field, i, t.RawGetInt(i).Type()))
		}
		if _, err := path.Match(string(s), ""); err != nil {
			L.ArgError(2, fmt.Sprintf("toolset %q: %s: bad pattern %q: %v", toolset, field, string(s), err))
		}
		out = append(out, string(s))
	}
	return out
}

// setToolset puts d in force. A function's snapshot holds nothing until
// the function has answered, unless an earlier function's answer is in
// force, which stays until then; the caller runs the function.
func (r *Runtime) setToolset(d toolsetDecl, fromConfig bool) {
	if r.toolsets == nil {
		r.toolsets = map[string]*toolsetEntry{}
	}
	e, ok := r.toolsets[d.name]
	if !ok {
		e = &toolsetEntry{}
		r.toolsets[d.name] = e
	}
	e.decl, e.fromConfig = d, fromConfig
	e.filter.end() // an earlier function's answers in flight are no longer wanted
	switch {
	case d.fn == nil:
		r.setSnapshot(e, Toolset{Include: d.include, Exclude: d.exclude, Mode: d.mode})
	case !e.snap.Resolved:
		r.setSnapshot(e, Toolset{Resolved: true})
	}
}

// setSnapshot makes ts what the gateway is handed for e, with a new
// version, unless it is what it already holds.
func (r *Runtime) setSnapshot(e *toolsetEntry, ts Toolset) {
	if e.snap.Version != 0 && sameSnapshot(e.snap, ts) {
		return
	}
	r.toolsetVersion++
	ts.Version = r.toolsetVersion
	e.snap = ts
	r.toolsetsDirty = true
}

func sameSnapshot(a, b Toolset) bool {
	return slices.Equal(a.Include, b.Include) && slices.Equal(a.Exclude, b.Exclude) &&
		a.Resolved == b.Resolved && slices.Equal(a.Tools, b.Tools) && a.Mode == b.Mode
}

// removeToolset takes a toolset out of force.
func (r *Runtime) removeToolset(name string) {
	if e, ok := r.toolsets[name]; ok {
		e.filter.end()
		delete(r.toolsets, name)
		r.toolsetsDirty = true
	}
}

// applyToolsets makes the config's toolsets match want: those the last
// config declared and want does not are removed, the others set, and
// their functions asked about the tools listed now. Toolsets declared at
// the REPL stay unless the config declares the same name. It runs on the
// loop outside any task, so the functions that answer at once are in the
// snapshot the gateway gets next.
func (r *Runtime) applyToolsets(want *desired) {
	if r.opts.Gateway == nil {
		return
	}
	for name, e := range r.toolsets {
		if _, ok := want.toolsets[name]; !ok && e.fromConfig {
			r.removeToolset(name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want.toolsets)) {
		d := want.toolsets[name]
		if e, ok := r.toolsets[name]; ok && e.fromConfig && d.fn == nil && e.decl.fn == nil &&
			slices.Equal(d.include, e.decl.include) && slices.Equal(d.exclude, e.decl.exclude) && d.mode == e.decl.mode {
			e.decl = d // the same patterns: nothing for the gateway to do
			continue
		}
		r.setToolset(d, true)
		if d.fn != nil {
			r.refilter(name)
		}
	}
	r.flushToolsets()
}

// flushToolsets hands the toolsets in force to the gateway if any changed
// since it was last handed them.
func (r *Runtime) flushToolsets() {
	if !r.toolsetsDirty || r.opts.Gateway == nil {
		return
	}
	r.toolsetsDirty = false
	sets := make(map[string]Toolset, len(r.toolsets))
	for name, e := range r.toolsets {
		sets[name] = e.snap
	}
	r.opts.Gateway.SetToolsets(sets)
}

// declaredAt is "chunk:line" of the Lua code calling the running builtin
// (one that is not shimmed), or "".
func declaredAt(L *lua.LState) string {
	if dbg, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
			return fmt.Sprintf("%s:%d", dbg.Source, dbg.CurrentLine)
		}
	}
	return ""
}
