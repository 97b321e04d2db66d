package luaapi

import "errors"

// ChunkCode says what stopped a run of [RunChunk].
type ChunkCode string

// The ways a run ends in error.
const (
	// ChunkSyntax: the code does not compile.
	ChunkSyntax ChunkCode = "SYNTAX"
	// ChunkTooLarge: the code is longer than a chunk may be.
	ChunkTooLarge ChunkCode = "TOO_LARGE"
	// ChunkRuntime: the chunk raised an error it did not catch.
	ChunkRuntime ChunkCode = "RUNTIME"
	// ChunkCPUBudget: Lua ran past the slice budget without a tool call.
	ChunkCPUBudget ChunkCode = "CPU_BUDGET"
	// ChunkTimeout: the run took longer than its time limit.
	ChunkTimeout ChunkCode = "TIMEOUT"
	// ChunkMemory: the host's memory grew past the memory limit.
	ChunkMemory ChunkCode = "MEMORY"
	// ChunkCallCap: the chunk made more tool calls than a run may.
	ChunkCallCap ChunkCode = "CALL_CAP"
	// ChunkUnknownTool: the chunk called or described a tool it was not
	// given.
	ChunkUnknownTool ChunkCode = "UNKNOWN_TOOL"
	// ChunkToolFailed: a tool call failed or its result was an error, and
	// the chunk did not catch it.
	ChunkToolFailed ChunkCode = "TOOL_FAILED"
	// ChunkUnavailable: the chunk used what the sandbox leaves out (io,
	// os, require, debug, load, …).
	ChunkUnavailable ChunkCode = "UNAVAILABLE"
	// ChunkCancelled: the caller's context ended.
	ChunkCancelled ChunkCode = "CANCELLED"
	// ChunkInternal: a bug of the sandbox itself.
	ChunkInternal ChunkCode = "INTERNAL"
)

// ChunkError is what stopped a run: a code and the message the result
// shows. Cause is the underlying error (the context's cause, the Lua
// error, the tool call's error), for errors.Is.
type ChunkError struct {
	Code    ChunkCode
	Message string
	Cause   error
}

func (e *ChunkError) Error() string { return e.Message }

func (e *ChunkError) Unwrap() error { return e.Cause }

// Causes of a run stopped by a limit.
var (
	errChunkTimeout = errors.New("run time limit exceeded")
	errCallCap      = errors.New("tool call cap reached")
)
