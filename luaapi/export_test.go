package luaapi

import "context"

// RootsPokes is how many times the runtime has asked for the manager to be
// told that the roots changed: a chunk that changes nothing must not.
func RootsPokes(r *Runtime) uint64 { return r.rootsNote.poked.Load() }

// ArraysReadable reports whether the growth of Lua tables' arrays is
// checked against the memory limit (gopher-lua's table layout is the one
// the check reads).
var ArraysReadable = arraysReadable

// RunChunkErr runs a chunk as RunChunk does and returns its output and
// what stopped it, a *ChunkError, for tests that tell failures apart by
// code.
func RunChunkErr(ctx context.Context, code string, env ChunkEnv, limits ChunkLimits) (string, error) {
	return runChunk(ctx, code, env, limits)
}
