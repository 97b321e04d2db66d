package luaapi

import (
	"context"
)

// fromOutside is how a goroutine that is not the loop (an SDK session
// answering a call or a server's request) has Lua work done: start runs on
// the loop and hands its value to reply, at once or later from a task it
// spawned; fromOutside waits for that value, for ctx to end (its cause is
// returned) or for the runtime to close (errClosed).
//
// The loop never waits on the caller: reply never blocks, and a value
// that comes after the caller stopped waiting is dropped. A task spawned
// with ctx is interrupted at its next wait once ctx ends, so a caller that
// gives up leaves nothing running for long.
func fromOutside[T any](r *Runtime, ctx context.Context, start func(reply func(T))) (T, error) {
	ch := make(chan T, 1)
	r.postAsync(func() {
		replied := false
		start(func(v T) {
			if !replied {
				replied = true
				ch <- v
			}
		})
	})
	var zero T
	select {
	case v := <-ch:
		return v, nil
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	case <-r.stop:
		return zero, errClosed
	}
}
