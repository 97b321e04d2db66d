package luaapi

import (
	"errors"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// DefaultMemoryLimit is the memory a running chunk may bring the host to
// before it is stopped (Options.MemoryLimit).
const DefaultMemoryLimit = 1 << 30

// memoryCheckEvery is how often the watchdog reads the memory while a chunk
// runs.
const memoryCheckEvery = 10 * time.Millisecond

// ErrMemoryLimit is the cause of a chunk stopped by the memory limit.
var ErrMemoryLimit = errors.New("memory limit exceeded")

// The memory the host holds is what the Go runtime has from the system
// less what it has given back: it counts the heap's garbage and the free
// pages not yet returned, which is what resident memory is made of. The
// heap alone let resident memory reach 1.6 times the limit while a table
// grew (each larger array is fresh pages; the freed smaller ones stay
// resident for a while).
const (
	totalMetric    = "/memory/classes/total:bytes"
	releasedMetric = "/memory/classes/heap/released:bytes"
)

// memorySamples is what held reads.
func memorySamples() []metrics.Sample {
	return []metrics.Sample{{Name: totalMetric}, {Name: releasedMetric}}
}

// memoryWatch stops a chunk that makes the host's memory grow past the limit, in
// two ways. Growth by many small values (a table filled in a loop) is
// seen by the watchdog: the loop publishes the task it is running; the
// watchdog goroutine reads it every memoryCheckEvery and, over the
// limit, marks that task and cancels it (the Lua VM checks its context
// between instructions). A single large value is one allocation the
// watchdog cannot interrupt (a string doubled in a loop went from 1 GiB
// to 16 GiB between two looks), so whatever makes one (`..`,
// table.concat, string.format, string.rep, json.decode) asks admit
// first, on the loop, and is refused before allocating (see sizes.go).
// Hooks, timers and callbacks are stopped by their slice budget sooner
// than small values could get them there; large ones are refused to them
// too.
type memoryWatch struct {
	limit   uint64
	running atomic.Pointer[task] // the chunk the loop runs, or nil
	started chan struct{}        // capacity 1: a chunk began running
}

// begin publishes the chunk the loop is about to run and wakes the
// watchdog, which sleeps while no chunk runs; end clears it.
func (w *memoryWatch) begin(t *task) {
	w.running.Store(t)
	select {
	case w.started <- struct{}{}:
	default:
	}
}

func (w *memoryWatch) end() { w.running.Store(nil) }

// watch runs until stop is closed; the Runtime owns it and waits for it.
// It ticks only while a chunk runs.
func (w *memoryWatch) watch(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	sample := memorySamples()
	tick := time.NewTicker(memoryCheckEvery)
	defer tick.Stop()
	for {
		tick.Stop() // no chunk runs: sleep until one starts
		select {
		case <-stop:
			return
		case <-w.started:
		}
		tick.Reset(memoryCheckEvery)
		for t := w.running.Load(); t != nil; t = w.running.Load() {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if t = w.running.Load(); t != nil && w.over(sample) {
				// Dead objects and free pages count until they are
				// collected and returned: do both once and look again, so
				// that a chunk is stopped for what is alive, not for the
				// garbage of one stopped before it.
				debug.FreeOSMemory()
				if w.over(sample) {
					t.overMemory.Store(true)
					t.cancel()
				}
			}
		}
	}
}

func (w *memoryWatch) over(sample []metrics.Sample) bool {
	return held(sample) > w.limit
}

// held reads the memory the host holds, without stopping the world.
func held(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	for _, s := range sample {
		if s.Value.Kind() != metrics.KindUint64 {
			return 0
		}
	}
	return sample[0].Value.Uint64() - sample[1].Value.Uint64()
}

// admit reports whether n more bytes fit under the limit. Garbage and
// free pages count until they are collected and returned: over the limit
// it does both once and looks again, so that a value is refused for what
// is alive. It runs on the loop.
func (w *memoryWatch) admit(n uint64) bool {
	sample := memorySamples()
	if held(sample)+n <= w.limit {
		return true
	}
	debug.FreeOSMemory()
	return held(sample)+n <= w.limit
}

// refuse stops the chunk the loop runs, if any, saying why: the value
// what would have needed n bytes. The caller then raises the Lua error.
// A hook or timer just gets the error.
func (w *memoryWatch) refuse(what string, n uint64) string {
	why := fmt.Sprintf("%s would need %d MiB, which would bring the host's memory past %d MiB while this chunk ran (the memory limit of Lua code); build smaller values", what, n>>20, w.limit>>20)
	if t := w.running.Load(); t != nil {
		t.memoryWhy = "stopped: " + why
		t.overMemory.Store(true)
		t.cancel()
	}
	return why
}

// memoryError is what a chunk stopped for memory reports.
func (w *memoryWatch) memoryError(t *task) *Error {
	msg := t.memoryWhy
	if msg == "" {
		msg = fmt.Sprintf("stopped: the host's memory grew past %d MiB while this chunk ran (the memory limit of Lua code); build smaller values", w.limit>>20)
	}
	return &Error{Message: msg, Traceback: t.trace, Cause: ErrMemoryLimit}
}

// watches finds the memoryWatch of a Lua state from any of its threads
// (by their shared *lua.Global): the VM's concatenation, which is
// patched for every state at once, has only the thread. Runtimes with no
// limit are not in it.
var watches sync.Map // *lua.Global → *memoryWatch

// bigValue is the size from which a value is checked against the memory
// limit before it is made; smaller ones are left to the watchdog.
const bigValue = 1 << 20

// reserve raises a Lua error, and stops the running chunk, when making a
// value of n bytes (what, for the message) would bring the memory past the
// memory limit of L's runtime.
func reserve(L *lua.LState, what string, n int) {
	if n < bigValue {
		return
	}
	v, ok := watches.Load(L.G)
	if !ok {
		return
	}
	w := v.(*memoryWatch)
	if w.admit(uint64(n)) {
		return
	}
	L.RaiseError("%s", w.refuse(what, uint64(n)))
}
