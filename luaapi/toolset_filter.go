package luaapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	lua "github.com/yuin/gopher-lua"
)

// FilterTimeout bounds how long a toolset's Lua function has, from the
// moment the runtime asks it about the tools, to answer for all of them.
// A tool it has not answered for by then (the loop busy with a long
// chunk, the function suspended) is left out, as is one it fails on, and
// a hook_error event says so. Until it answers, the gateway keeps serving
// its previous answer: the gateway never waits for Lua.
const FilterTimeout = time.Second

// filterState is the asking of one toolset's function. Owned by the loop.
type filterState struct {
	ctx  context.Context // the declaration's: ends when it is replaced or removed
	stop context.CancelFunc
	// started numbers the runs; applied is the run whose answer is in
	// force: an earlier run that finishes later is ignored.
	started, applied uint64
}

// end abandons the runs in flight.
func (f *filterState) end() {
	if f.stop != nil {
		f.stop()
		f.stop, f.ctx = nil, nil
	}
}

// filterRun is the function asked about every tool listed at one moment,
// each tool a budgeted task of its own.
type filterRun struct {
	seq     uint64
	tools   []manager.ToolInfo
	keep    []bool
	left    int // tools not answered for yet
	ctx     context.Context
	cancel  context.CancelFunc
	unwatch func() bool // stops the deadline's wake-up
	over    bool
}

// changesTools reports whether an event can change what mcp_tools lists
// (a client's own session of a per-client server changes nothing listed).
func changesTools(e events.Event) bool {
	switch e.Kind {
	case events.KindAdded, events.KindRemoved, events.KindConnected,
		events.KindToolsChanged, events.KindLagged:
		return e.Text("client") == ""
	}
	return false
}

// refilterAll asks every toolset function again, if the tools changed
// since they were last asked, and hands the gateway what answered at once.
func (r *Runtime) refilterAll() {
	if !r.toolsStale {
		return
	}
	r.toolsStale = false
	for _, name := range slices.Sorted(maps.Keys(r.toolsets)) {
		r.refilter(name)
	}
	r.flushToolsets()
}

// refilter asks toolset name's function about every tool listed now. It
// must run on the loop outside any task (the function runs as tasks of
// its own). The answer becomes the toolset's snapshot when all tools are
// answered for, or FilterTimeout has passed, whichever is first.
func (r *Runtime) refilter(name string) {
	e := r.toolsets[name]
	if e == nil || e.decl.fn == nil || r.closing {
		return
	}
	f := &e.filter
	if f.ctx == nil {
		f.ctx, f.stop = context.WithCancel(r.base)
	}
	tools, _ := r.toolbox.Tools("")
	f.started++
	run := &filterRun{seq: f.started, tools: tools, keep: make([]bool, len(tools)), left: len(tools)}
	run.ctx, run.cancel = context.WithTimeout(f.ctx, FilterTimeout)
	if run.left == 0 {
		r.filterDone(name, e, run)
		return
	}
	run.unwatch = context.AfterFunc(run.ctx, func() {
		r.postAsync(func() { r.filterDone(name, e, run) })
	})
	budget := min(r.opts.SliceBudget, FilterTimeout)
	for i, ti := range tools {
		if run.over {
			break
		}
		r.spawnWith(run.ctx, e.decl.fn, []lua.LValue{toolTable(r.state, ti)}, taskOptions{budget: budget}, func(vals []lua.LValue, err error) {
			switch {
			case run.over:
				return
			case run.ctx.Err() != nil: // late, or no longer wanted
				r.filterDone(name, e, run)
				return
			case err != nil:
				r.filterFailed(name, ti.FullName, err.Error())
			}
			run.keep[i] = err == nil && len(vals) > 0 && lua.LVAsBool(vals[0])
			if run.left--; run.left == 0 {
				r.filterDone(name, e, run)
			}
		})
	}
}

// filterDone ends a run: complete, late (the tools not answered for are
// left out) or abandoned (its declaration replaced or removed, the
// runtime closing). A complete or late answer becomes the snapshot unless
// a later run's is already in force.
func (r *Runtime) filterDone(name string, e *toolsetEntry, run *filterRun) {
	if run.over {
		return
	}
	run.over = true
	if run.unwatch != nil {
		run.unwatch()
	}
	why := run.ctx.Err()
	run.cancel()
	switch {
	case run.left == 0:
	case why == context.DeadlineExceeded:
		r.filterFailed(name, "", fmt.Sprintf("no answer for %d of %d tools within %s (the Lua loop busy, or the function waiting); they are left out until the tools or the toolset change",
			run.left, len(run.tools), FilterTimeout))
	default:
		return
	}
	if r.toolsets[name] != e || run.seq < e.filter.applied {
		return
	}
	e.filter.applied = run.seq
	chosen := []string{}
	for i, t := range run.tools {
		if run.keep[i] {
			chosen = append(chosen, t.Server+"."+t.Name)
		}
	}
	slices.Sort(chosen)
	r.setSnapshot(e, Toolset{Resolved: true, Tools: chosen})
	r.queueFlush()
}

// filterFailed publishes hook_error for a toolset function's failure.
func (r *Runtime) filterFailed(name, tool, msg string) {
	if r.base.Err() != nil {
		return // shutting down
	}
	r.bus.Emit("", "", HookError{Hook: fmt.Sprintf("mcp_toolset(%q)", name), Tool: tool, Error: msg})
}

// queueFlush hands the gateway the toolsets after the loop's current work,
// once however many answers come in meanwhile.
func (r *Runtime) queueFlush() {
	if r.flushQueued {
		return
	}
	r.flushQueued = true
	r.postAsync(func() {
		r.flushQueued = false
		r.flushToolsets()
	})
}
