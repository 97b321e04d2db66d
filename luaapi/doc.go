// Package luaapi is mcpvisor's Lua control plane: the globals that
// startup.lua, the REPL and hooks use (mcp_add, mcp_call, …), the json
// module, and the loop that runs all Lua code.
//
// # Concurrency
//
// One goroutine, the loop, owns the gopher-lua state: no other goroutine
// ever touches it, nor any Lua value (gopher-luar conversions included).
// Everything else posts closures to the loop ([Runtime.Exec] does). The
// state is therefore not exported: other packages, tests included, reach
// Lua only through the Runtime's methods, which post to the loop and wait.
//
// Every chunk runs as a coroutine task. A builtin that has to wait —
// mcp_call, mcp_wait, sleep, mcp_remove with {wait = true} — starts the work
// on its own goroutine and yields the task; when the work is done its result
// is posted back to the loop, converted to Lua there and the task resumed
// with a fixed number of values. The loop therefore keeps serving other
// chunks while one waits, and the manager never calls into Lua.
//
// The manager is seen through small interfaces, one per part of the API
// ([Servers], [Observer], [Toolbox], [Lifecycle], [Meter],
// [ResourceReader], [PromptGetter], [EventSource], [Answering];
// [Options.Manager] is all of them in one value). It is called from several goroutines: the
// loop, for everything that answers at once; the goroutines the runtime
// starts for work that waits, for Call, Wait, Discover, ReadResource and
// GetPrompt; and the callers of [Runtime.Complete] and
// [Runtime.LoadConfig]. It must therefore be safe for concurrent use and
// must not block in the loop's calls. It never calls into Lua: the
// progress function mcp_call hands it only posts to the loop.
//
// Hooks are fed by the loop itself, from two queues it drains in turns:
// its subscription to the events bus (lifecycle; it feeds the HUD model
// too) and its listener of the manager's notices (what servers say: log
// messages, progress, list changes, resource updates), which it hands to
// notification hooks as the events they render as. The listener never
// makes a server wait for Lua: when the loop falls behind, what it missed
// is a lagged event, as on the bus.
//
// What servers ask of their client (elicitation, sampling, roots) reaches
// Lua through the answerer [New] hands the manager: its methods run on the
// manager's goroutines, read only what the loop publishes in atomics (the
// kinds with a handler, the roots), and run a handler as a task posted to
// the loop, bounded by the server's request, waiting for its answer off the
// loop. A form no handler answers goes to [Options.Prompter], the person
// at the REPL.
//
// The gateway ([Options.Gateway]) is only ever called from the loop, and
// never calls back but through the mode function: a toolset that a Lua
// function decides is evaluated on the loop (each tool a budgeted task,
// all bounded by [FilterTimeout]) whenever an event says the tools
// changed or the toolset is declared, and the tools it chose are handed
// over as a versioned snapshot. The mode function the runtime hands the
// gateway (mcp_client_mode) is called on the gateway's goroutines when a
// client session starts: like the answerer it posts the Lua function to
// the loop as a budgeted task and waits for its answer off the loop, at
// most [ModeTimeout], after which the client gets its default mode.
//
// [RunChunk] is apart from all this: it runs a chunk sent by a gateway
// client (the code mode's run_lua) in a Lua state made for that run, owned
// by the calling goroutine until it returns, and closed then. It needs no
// Runtime and shares nothing with the loop or with other runs, which may
// go on concurrently. Its tool calls are plain Go calls of
// [ChunkEnv.Call] on that goroutine, with a context that ends with the
// run; the only other goroutines it starts are a memory watchdog and a
// timer, both stopped before it returns.
//
// Yielding cannot work across a Go frame (pcall, table.sort comparators,
// string.gsub callbacks) or inside a coroutine the script made itself; the
// waiting builtins detect both and raise a clear error instead of losing a
// result.
//
// # Errors
//
// Lua failures are [*Error] values carrying the message with chunk:line and
// the traceback captured inside the task. Functions that can fail at run
// time return `nil, err` where err is a table {code, server, operation,
// message, remedy} whose tostring is "CODE: message"; invalid use (a bad
// spec, wrong argument types) raises a Lua error. remedy is the manager's
// [manager.Remedy] said as the Lua call that helps (`mcp_enable("git") to
// connect it`); the message ends with it too, and mcp_status gives a down
// server's.
package luaapi
