// Package manager keeps a set of MCP servers connected and lets callers use
// their tools by namespaced name. It is a plain Go library: a program can
// embed it without Lua.
//
// # Model
//
// [Manager.Add] records a declaration ([Spec]) and returns at once. Each
// server then has one supervisor goroutine that owns everything about its
// connection: it spawns the stdio process (or dials the HTTP endpoint),
// performs the MCP handshake through the official go-sdk, discovers the
// tools, serves until the session is lost, and reconnects after a capped,
// jittered backoff ([Backoff.Delay]). With MaxRetries set it gives up after
// MaxRetries+1 consecutive failed attempts and the server is failed.
//
// The lifecycle is a typed [State]. Every change publishes a new immutable
// [Status] snapshot (atomic swap) and one event on the [events.Bus]:
// added → connecting → connected → (disconnected) backoff → connecting … →
// removed.
//
// Callers never connect. [Manager.Call] on a server that is connecting or
// backing off waits for the supervisor's attempt, up to the call's timeout,
// so connecting is single-flight by construction.
//
// # Processes
//
// Stdio servers run in their own process group with pipes the host owns;
// stderr is always drained (the last 64 KiB are kept and shown when the
// process dies during connect). Closing a server closes stdin, waits
// [Options.StopGrace], sends SIGTERM to the group, waits again, sends
// SIGKILL, reaps the child and finally SIGKILLs the group so no grandchild
// survives.
//
// # Errors
//
// Every error is an [*Error] with a [Code], the server and the operation:
//
//	server "git": tools/call "status": timeout after 1s
//
// Test codes with errors.Is against the Err* sentinels; deadlines of ours
// also match [ErrTimeout].
//
// # Concurrency
//
// Manager is safe for concurrent use. Its mutex guards only the map of
// servers; it is never held while calling out. A supervisor's goroutine is
// the single writer of its snapshot; readers load it atomically and wait for
// changes on a channel that is closed on every publish. Events are
// published after the snapshot is stored, so an observer that sees an event
// can already read the state it describes.
package manager
