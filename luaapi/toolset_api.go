package luaapi

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/expose"
	"github.com/mcpvisor/mcpvisor/manager"
)

// FilterTimeout bounds how long a toolset's Lua filter may take to answer
// for one tool; a filter that is late (the loop busy with a long chunk) or
// fails excludes the tool, and a hook_error event says so.
const FilterTimeout = time.Second

// toolsetDecl is one mcp_toolset: patterns, or a Lua function deciding.
type toolsetDecl struct {
	name             string
	include, exclude []string
	fn               *lua.LFunction // nil for patterns
	where            string
}

// toolsetEntry is a toolset in force. Owned by the loop.
type toolsetEntry struct {
	decl       toolsetDecl
	version    uint64
	fromConfig bool // declared by the config file, which removes it when it no longer declares it
}

// mcp_toolset(name, {include = {"git.*"}, exclude = {…}}) or
// mcp_toolset(name, function(tool) return … end) → name. Declares the
// toolset the gateway serves at /toolsets/NAME/mcp: the tools whose
// "server.tool" matches an include pattern (every tool if there is none)
// and no exclude pattern, or those the function returns true for (it gets
// the table mcp_tools gives for one tool). In the config file it takes
// effect once the whole file has run and goes with a reload that no longer
// declares it; elsewhere at once.
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
			default:
				L.ArgError(2, fmt.Sprintf("unknown field %s; a toolset takes include and exclude (or is a function(tool))", key))
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
	r.pushToolsets()
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

// setToolset puts d in force, bumping its version when the gateway cannot
// tell by comparing (a function) or when the patterns changed.
func (r *Runtime) setToolset(d toolsetDecl, fromConfig bool) {
	if r.toolsets == nil {
		r.toolsets = map[string]*toolsetEntry{}
	}
	e, ok := r.toolsets[d.name]
	if !ok {
		e = &toolsetEntry{}
		r.toolsets[d.name] = e
	}
	if !ok || d.fn != nil || e.decl.fn != nil || !slices.Equal(d.include, e.decl.include) || !slices.Equal(d.exclude, e.decl.exclude) {
		r.toolsetVersion++
		e.version = r.toolsetVersion
	}
	e.decl, e.fromConfig = d, fromConfig
}

// applyToolsets makes the config's toolsets match want: those the last
// config declared and want does not are removed, the others set. Toolsets
// declared at the REPL stay unless the config declares the same name.
func (r *Runtime) applyToolsets(want *desired) {
	if r.opts.Gateway == nil {
		return
	}
	changed := false
	for name, e := range r.toolsets {
		if _, ok := want.toolsets[name]; !ok && e.fromConfig {
			delete(r.toolsets, name)
			changed = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want.toolsets)) {
		d := want.toolsets[name]
		if e, ok := r.toolsets[name]; ok && e.fromConfig && d.fn == nil && e.decl.fn == nil &&
			slices.Equal(d.include, e.decl.include) && slices.Equal(d.exclude, e.decl.exclude) {
			e.decl = d // the same patterns: nothing for the gateway to do
			continue
		}
		r.setToolset(d, true)
		changed = true
	}
	if changed {
		r.pushToolsets()
	}
}

// pushToolsets hands the toolsets in force to the gateway, which applies
// them in the background.
func (r *Runtime) pushToolsets() {
	sets := make(map[string]Toolset, len(r.toolsets))
	for name, e := range r.toolsets {
		ts := Toolset{Include: e.decl.include, Exclude: e.decl.exclude, Version: e.version}
		if e.decl.fn != nil {
			ts.Filter = r.toolsetFilter(name, e.decl.fn)
		}
		sets[name] = ts
	}
	r.opts.Gateway.SetToolsets(sets)
}

// toolsetFilter turns a Lua filter into one the gateway can call from its
// own goroutine: it asks the loop to run fn(tool) for every tool, each as
// a budgeted task, and waits at most FilterTimeout for all the answers
// (one wait per relisting, however many tools). A failure or a late
// answer excludes the tool and publishes hook_error; the loop never waits
// on the caller.
func (r *Runtime) toolsetFilter(name string, fn *lua.LFunction) func([]manager.ToolInfo) []bool {
	what := fmt.Sprintf("mcp_toolset(%q)", name)
	fail := func(tool string, err string) {
		r.bus.Publish(events.KindHookError, "", events.Fields{"hook": what, "tool": tool, "error": err})
	}
	return func(tools []manager.ToolInfo) []bool {
		answer := make(chan []bool, 1)
		r.postAsync(func() {
			keep := make([]bool, len(tools)) // the loop's own, sent when complete
			left := len(tools)
			if r.closing || left == 0 {
				answer <- keep
				return
			}
			budget := min(r.opts.SliceBudget, FilterTimeout)
			for i, ti := range tools {
				r.spawnWith(r.base, fn, []lua.LValue{toolTable(r.state, ti)}, taskOptions{budget: budget}, func(vals []lua.LValue, err error) {
					if err != nil && r.base.Err() == nil {
						fail(ti.FullName, err.Error())
					}
					keep[i] = err == nil && len(vals) > 0 && lua.LVAsBool(vals[0])
					if left--; left == 0 {
						answer <- keep
					}
				})
			}
		})
		timer := time.NewTimer(FilterTimeout)
		defer timer.Stop()
		select {
		case keep := <-answer:
			return keep
		case <-timer.C:
			fail("", fmt.Sprintf("no answer for all %d tools within %s (the Lua loop is busy); the toolset is left empty until the next change", len(tools), FilterTimeout))
		case <-r.stop:
		}
		return make([]bool, len(tools))
	}
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
