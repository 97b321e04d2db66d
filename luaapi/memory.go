package luaapi

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// DefaultMemoryLimit is the heap a running chunk may bring the host to
// before it is stopped (Options.MemoryLimit).
const DefaultMemoryLimit = 1 << 30

// memoryCheckEvery is how often the watchdog reads the heap while a chunk
// runs.
const memoryCheckEvery = 50 * time.Millisecond

// ErrMemoryLimit is the cause of a chunk stopped by the memory limit.
var ErrMemoryLimit = errors.New("memory limit exceeded")

// heapMetric is the live heap, read without stopping the world.
const heapMetric = "/memory/classes/heap/objects:bytes"

// memoryWatch stops a chunk that makes the heap grow past the limit: a
// string doubled in a loop reached 2 GB before anything noticed. The loop
// publishes the task it is running; the watchdog goroutine reads the heap
// every memoryCheckEvery and, over the limit, marks that task and cancels
// it (the Lua VM checks its context between instructions). Hooks, timers
// and callbacks are stopped by their slice budget sooner than they could
// get there.
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
	sample := []metrics.Sample{{Name: heapMetric}}
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
				// Dead objects count until the collector runs: collect
				// once and look again, so that a chunk is stopped for what
				// is alive, not for the garbage of one stopped before it.
				runtime.GC()
				if w.over(sample) {
					t.overMemory.Store(true)
					t.cancel()
				}
			}
		}
	}
}

func (w *memoryWatch) over(sample []metrics.Sample) bool {
	metrics.Read(sample)
	return sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > w.limit
}

// memoryError is what a chunk stopped by the watchdog reports.
func (w *memoryWatch) memoryError(t *task) *Error {
	return &Error{
		Message:   fmt.Sprintf("stopped: the heap grew past %d MiB while this chunk ran (the memory limit of Lua code); build smaller values", w.limit>>20),
		Traceback: t.trace,
		Cause:     ErrMemoryLimit,
	}
}
