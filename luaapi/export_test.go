package luaapi

// RootsPokes is how many times the runtime has asked for the manager to be
// told that the roots changed: a chunk that changes nothing must not.
func RootsPokes(r *Runtime) uint64 { return r.rootsNote.poked.Load() }

// ArraysReadable reports whether the growth of Lua tables' arrays is
// checked against the memory limit (gopher-lua's table layout is the one
// the check reads).
var ArraysReadable = arraysReadable
