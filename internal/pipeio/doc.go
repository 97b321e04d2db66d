// Package pipeio reads and writes the pipes between mcpvisor and the
// processes it talks to (a stdio client, a stdio server) without the Go
// scheduler's bookkeeping of a system call.
//
// A read or write through an *os.File enters the scheduler as a system
// call that may block: the first one after the process has been idle
// wakes the scheduler's monitor thread, which then polls every 20
// microseconds for a millisecond or more, on every message. A pipe opened
// without blocking never blocks in its read or write (it answers "try
// again" instead, and the runtime's poller waits), so on Linux this
// package makes those calls directly, and waits for the pipe through the
// file's own poller. Anything it cannot do so (a file that blocks, an
// error) goes through the *os.File as before, with its errors as the os
// package words them.
//
// # Concurrency
//
// A Reader may be used by one goroutine at a time, and so may a Writer:
// unlike an *os.File, a Writer does not keep a write whole against a
// concurrent one, so its callers write one message at a time (as
// mcpvisor's stdio connections do).
package pipeio
