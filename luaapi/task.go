package luaapi

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// task is one coroutine run by the loop: a chunk, a hook call or a timer.
// All of its fields are owned by the loop goroutine.
type task struct {
	co      *lua.LState
	ctx     context.Context // cancelled to stop the task (Ctrl-C, Close)
	cancel  context.CancelFunc
	waiting string // the builtin the task is suspended in, or ""
	trace   string // traceback of the last error raised in the task
	// stoppedAt is the "file:line" of the Lua code the task was running
	// when its context ended (the first error raised after it did; a
	// pcall can catch that one, not the next).
	stoppedAt string
	done      func(vals []lua.LValue, err error)
	// budget bounds each slice (the run between two suspensions) of hooks,
	// timers and callbacks; zero for chunks, which Ctrl-C cancels instead.
	budget time.Duration
	// running, when limited, bounds the time all its slices together run:
	// a config file, which nobody is there to interrupt. left is what
	// remains of it.
	running time.Duration
	left    time.Duration
	// origin tags what the task registers (hooks, timers, servers): the
	// config generation that is running it, or 0 for everything else.
	origin int
	// config collects the declarations of a config evaluation; nil outside.
	config *desired
	// overMemory is set by the memory watchdog (another goroutine), or by
	// a value refused for its size, before the task is cancelled.
	overMemory atomic.Bool
	// memoryWhy says which value was refused, when one was (set on the
	// loop).
	memoryWhy string
}

// taskOptions are the optional properties of a new task.
type taskOptions struct {
	budget  time.Duration
	running time.Duration
	origin  int
	config  *desired
}

// errBudget is the cause of a slice stopped by its budget.
var errBudget = errors.New("slice budget exceeded")

// ErrConfigBudget is the cause of a config file stopped because it ran
// longer than its time budget (Options.ConfigBudget).
var ErrConfigBudget = errors.New("config time budget exceeded")

// bootstrap is the root function of every task. It arms traceback capture
// on the task's own thread (Resume resets the thread's panic handler when it
// starts it, so this must happen inside), then tail-calls the task's body.
// It returns the body's result count first: Resume reports a body that
// returned nothing as one nil, which a REPL would print.
const bootstrap, taskChunk = `local arm, fn = ...; arm()
local function pack(...) return select("#", ...), ... end
return pack(fn(select(3, ...)))`, "(task)"

// bootstrapProto is the bootstrap compiled once. Compiling it on every
// spawn was about a third of the fixed cost of running a chunk. A compiled
// FunctionProto is read-only, so every state and task can share it
// (gopher-lua documents sharing byte code between states).
var bootstrapProto = sync.OnceValue(func() *lua.FunctionProto {
	chunk, err := parse.Parse(strings.NewReader(bootstrap), taskChunk)
	if err != nil {
		panic(err) // the bootstrap is a constant
	}
	proto, err := lua.Compile(chunk, taskChunk)
	if err != nil {
		panic(err)
	}
	return proto
})

// spawn starts fn(args...) as a new task; done is called on the loop when
// the task finishes or fails.
func (r *Runtime) spawn(ctx context.Context, fn *lua.LFunction, args []lua.LValue, done func([]lua.LValue, error)) {
	r.spawnWith(ctx, fn, args, taskOptions{}, done)
}

// spawnWith is spawn with a budget, an origin or a config collector.
func (r *Runtime) spawnWith(ctx context.Context, fn *lua.LFunction, args []lua.LValue, o taskOptions, done func([]lua.LValue, error)) {
	co := r.thread()
	t := &task{co: co, done: done, budget: o.budget, running: o.running, left: o.running, origin: o.origin, config: o.config}
	if ctx == r.base {
		// Hooks and timers: Close cancels r.base itself, and each slice gets
		// its own budget context anyway.
		t.ctx, t.cancel = ctx, func() {}
	} else {
		tctx, cancel := context.WithCancel(ctx)
		stopOnClose := context.AfterFunc(r.base, cancel)
		t.ctx, t.cancel = tctx, func() { stopOnClose(); cancel() }
	}
	r.tasks[co] = t
	if r.arm == nil {
		r.arm = r.state.NewFunction(r.armTraceback)
		r.root = r.state.NewFunctionFromProto(bootstrapProto())
	}
	r.resume(t, r.root, append([]lua.LValue{r.arm, fn}, args...))
}

// armTraceback is the bootstrap's arm(): it makes the task's thread record
// a traceback when an error is raised in it.
func (r *Runtime) armTraceback(L *lua.LState) int {
	t := r.tasks[L]
	L.Panic = func(L *lua.LState) {
		if t != nil {
			t.trace = traceback(L)
			if ctx := L.Context(); t.stoppedAt == "" && ctx != nil && ctx.Err() != nil {
				t.stoppedAt = where(L)
			}
		}
		obj := L.Get(-1)
		if msg, ok := obj.(lua.LString); ok {
			obj = lua.LString(explainCall(L, string(msg)))
		}
		panic(&lua.ApiError{Type: lua.ApiErrorRun, Object: obj})
	}
	return 0
}

// resume runs the task's next slice and settles what happened: suspended in
// one of our builtins (wait for its completion to be posted), finished, or
// failed.
func (r *Runtime) resume(t *task, fn *lua.LFunction, args []lua.LValue) {
	ctx := t.ctx
	if t.budget > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(t.ctx, t.budget, errBudget)
		defer cancel()
	}
	if t.running > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, t.left, ErrConfigBudget)
		defer cancel()
	}
	t.co.SetContext(ctx)
	if t.budget == 0 {
		r.memory.begin(t) // a chunk: watched for memory
	}
	start := time.Now()
	st, vals, err := r.resumeSafely(t, fn, args)
	t.left -= time.Since(start)
	r.memory.end()
	switch {
	case err != nil && t.overMemory.Load():
		r.finish(t, nil, r.memory.memoryError(t))
	case err != nil && errors.Is(context.Cause(ctx), ErrConfigBudget) && t.ctx.Err() == nil:
		at := t.stoppedAt
		if at == "" {
			at = "config"
		}
		r.finish(t, nil, &Error{
			Message:   fmt.Sprintf("%s: stopped: the config ran for %s without finishing (its time budget; a loop that never ends?); --config-budget sets it", at, t.running),
			Traceback: t.trace,
			Cause:     ErrConfigBudget,
		})
	case err != nil && context.Cause(ctx) == errBudget && t.ctx.Err() == nil:
		r.finish(t, nil, &Error{
			Message:   fmt.Sprintf("stopped after %s without yielding (the time budget of a hook, timer or callback slice); move long work out of hooks", t.budget),
			Traceback: t.trace,
			Cause:     errBudget,
		})
	case err != nil:
		r.finish(t, nil, r.taskError(t, err))
	case st == lua.ResumeYield && t.waiting == "":
		r.finish(t, nil, &Error{Message: "coroutine.yield was called outside a coroutine created with coroutine.create/wrap"})
	case st == lua.ResumeOK && t.waiting != "":
		// The yield happened where gopher-lua cannot suspend (a metamethod,
		// an iterator): the task ran on without the result. Say so rather
		// than continue with a lost value.
		r.finish(t, nil, &Error{Message: fmt.Sprintf("%s cannot run inside pcall, a metamethod, an iterator or a Go callback (table.sort, string.gsub); its result was lost and the chunk stopped", t.waiting)})
	case st == lua.ResumeOK:
		r.finish(t, unpackResults(vals), nil)
		r.recycle(t.co)
	}
}

// unpackResults undoes the bootstrap's pack: a count, then the values.
func unpackResults(vals []lua.LValue) []lua.LValue {
	if len(vals) == 0 {
		return nil
	}
	n, ok := vals[0].(lua.LNumber)
	if !ok || int(n) > len(vals)-1 {
		return vals
	}
	return vals[1 : 1+int(n)]
}

func (r *Runtime) resumeSafely(t *task, fn *lua.LFunction, args []lua.LValue) (st lua.ResumeState, vals []lua.LValue, err error) {
	defer func() {
		if p := recover(); p != nil {
			st, err = lua.ResumeError, fmt.Errorf("internal error while running Lua: %v", p)
		}
	}()
	st, err, vals = r.state.Resume(t.co, fn, args...)
	return st, vals, err
}

// maxIdleThreads bounds the pool of finished threads kept for reuse.
const maxIdleThreads = 32

// thread returns a thread for a new task: a recycled one if any. Making a
// thread costs ~20µs and allocates its stacks; a hook runs per event.
func (r *Runtime) thread() *lua.LState {
	if n := len(r.idle); n > 0 {
		co := r.idle[n-1]
		r.idle = r.idle[:n-1]
		return co
	}
	co, _ := r.state.NewThread()
	return co
}

// recycle keeps a thread whose task ran to its end (gopher-lua marks it
// dead, but its call stack is unwound and it can run a new function; a
// thread that failed is dropped, its state is not). The finished function
// and its results are still on its value stack: clear them.
func (r *Runtime) recycle(co *lua.LState) {
	if len(r.idle) >= maxIdleThreads {
		return
	}
	co.SetTop(0)
	co.Dead = false
	co.RemoveContext()
	r.idle = append(r.idle, co)
}

func (r *Runtime) finish(t *task, vals []lua.LValue, err error) {
	delete(r.tasks, t.co)
	t.cancel()
	t.waiting = ""
	if t.done != nil {
		t.done(vals, err)
	}
}

// await suspends the calling task in builtin name until work completes. work
// runs on its own goroutine with the task's context and returns a function
// that the loop calls to build exactly nret values to resume with (a fixed
// arity, so the yield site never sees missing registers). It returns the
// value a Go builtin must return.
func (r *Runtime) await(L *lua.LState, name string, nret int, work func(ctx context.Context) func(L *lua.LState) []lua.LValue) int {
	t := r.checkSuspend(L, name)
	t.waiting = name
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		build := work(t.ctx)
		r.post(func() {
			if r.tasks[t.co] != t || t.waiting != name {
				return // the task already ended
			}
			t.waiting = ""
			vals := build(r.state)
			for len(vals) < nret {
				vals = append(vals, lua.LNil)
			}
			r.resume(t, nil, vals[:nret])
		})
	}()
	return L.Yield()
}

// checkSuspend returns the task running L, or raises the error saying why
// builtin name cannot suspend it here. Builtins with side effects call it
// before acting.
func (r *Runtime) checkSuspend(L *lua.LState, name string) *task {
	t, ok := r.tasks[L]
	if !ok {
		raiseAt(L, "%s cannot run inside a coroutine created by coroutine.create/wrap; call it from the chunk or hook itself", name)
	}
	if r.closing {
		// Close's cancellation reaches tasks through an AfterFunc, i.e.
		// asynchronously: cancel now so the task's error says it was
		// interrupted (with its Cause) rather than failed.
		t.cancel()
		raiseAt(L, "%s: the Lua runtime is closing", name)
	}
	if inGoFrame(L) || nestedLoop() {
		hint := ""
		if name == "mcp_call" {
			hint = "; use mcp_call_cb(name, args, function(result, err) ... end) there"
		}
		raiseAt(L, "%s cannot run inside pcall, a metamethod, an iterator or a Go callback (table.sort, string.gsub)%s", name, hint)
	}
	return t
}

// inGoFrame reports whether a Go function other than the running builtin is
// on the task's stack: pcall, xpcall or a callback, across which a yield
// would be lost.
func inGoFrame(L *lua.LState) bool {
	for level := 1; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return false
		}
		if _, err := L.GetInfo("S", dbg, lua.LNil); err == nil && dbg.What == "G" {
			return true
		}
	}
}

// nestedLoop reports whether the running builtin was reached through a
// nested run of gopher-lua's VM: a metamethod (__index, __add, …) or a
// generic-for iterator is called by the VM from Go, not by a Lua call
// instruction, so no "G" frame shows on the Lua stack, yet a yield there
// corrupts the thread (a nil dereference inside gopher-lua). A task's
// slice runs exactly one VM loop (from Resume); more on the Go stack means
// Go-level nesting. If gopher-lua renames its loops none are found and the
// check stays silent (TestSuspendingBuiltinsInForbiddenPlaces catches it).
func nestedLoop() bool {
	var pcs [128]uintptr
	loops := 0
	for _, pc := range pcs[:runtime.Callers(3, pcs[:])] {
		if isVMLoop(pc) {
			if loops++; loops > 1 {
				return true
			}
		}
	}
	return false
}

// vmLoopPCs caches, per program counter, whether it lies in one of
// gopher-lua's VM loops: symbolising every frame on every suspension cost
// ~7µs a call.
var vmLoopPCs sync.Map // uintptr → bool

func isVMLoop(pc uintptr) bool {
	if v, ok := vmLoopPCs.Load(pc); ok {
		return v.(bool)
	}
	loop := false
	if f := runtime.FuncForPC(pc - 1); f != nil {
		name, ok := strings.CutPrefix(f.Name(), "github.com/yuin/gopher-lua.")
		loop = ok && (name == "mainLoop" || name == "mainLoopWithContext")
	}
	vmLoopPCs.Store(pc, loop)
	return loop
}

// traceback renders the task's stack at the moment of an error.
func traceback(L *lua.LState) string {
	var b strings.Builder
	b.WriteString("stack traceback:")
	last := ""
	for level := 0; level < 32; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sln", dbg, lua.LNil); err != nil || dbg.Source == taskChunk || dbg.Source == shimChunk {
			continue // our own frames: the bootstrap and the shims
		}
		var line string
		switch {
		case dbg.What == "G":
			line = "[G]: in function " + orQ(dbg.Name)
		case dbg.What == "main" || dbg.LineDefined == 0:
			// A chunk is called by the bootstrap, so gopher-lua sees a plain
			// function (named after the bootstrap's local); like PUC Lua,
			// tell chunks by their LineDefined of 0.
			line = fmt.Sprintf("%s:%d: in main chunk", dbg.Source, dbg.CurrentLine)
		default:
			line = fmt.Sprintf("%s:%d: in function %s", dbg.Source, dbg.CurrentLine, orQ(dbg.Name))
		}
		if line != last { // a tail call shows its frame twice
			b.WriteString("\n\t" + line)
			last = line
		}
	}
	return b.String()
}

// where is the "file:line" of the innermost Lua code on L's stack, or "".
func where(L *lua.LState) string {
	for level := 0; level < 32; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			return ""
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.What == "G" || dbg.CurrentLine <= 0 ||
			dbg.Source == taskChunk || dbg.Source == shimChunk {
			continue
		}
		return fmt.Sprintf("%s:%d", dbg.Source, dbg.CurrentLine)
	}
	return ""
}

func orQ(name string) string {
	if name == "" {
		return "<anonymous>"
	}
	return "'" + name + "'"
}
