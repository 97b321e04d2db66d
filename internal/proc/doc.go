// Package proc runs a stdio MCP server as a child process and gives the
// go-sdk a transport over its pipes.
//
// [Start] spawns the command in a process group of its own, with stdin,
// stdout and stderr on pipes the host owns (not exec's), so that reading
// stdout to EOF never races with the reap and a grandchild holding a pipe
// never wedges the host. Stderr is always drained: the last 64 KiB are kept
// for [Process.ExitError], and each line is logged at debug level, at most
// 100 a second.
//
// [Process.Close] closes stdin, waits the grace period, sends SIGTERM to the
// group, waits again, sends SIGKILL, reaps the child and finally SIGKILLs
// the group so that no grandchild (the server under `npx`, say) survives.
// The go-sdk's own CommandTransport signals only the direct child.
//
// On Linux nothing started for a server outlives the host, however the
// host dies. A binary that calls [RunShimIfAsked] first thing (mcpvisor
// does; so do the tests that start servers) starts each server through a
// shim: the same binary re-executed with a hidden __shim subcommand. The
// shim is a child subreaper with a parent-death signal; it starts the
// server in its own process group with the host's pipes as its standard
// streams (nothing is copied), reports the server's pid, and when the
// server exits or the host disappears, kills the server's group and every
// descendant it adopted, reaps them, and exits as the server did (same
// exit code or signal). The host reaps the shim; [Process.Pid] and the
// group it signals are the server's. Without the shim (another binary,
// another OS, or MCPVISOR_SHIM=off) the server is the host's child and
// gets SIGKILL as its parent-death signal, but a grandchild may survive.
// Either child is forked from a goroutine locked to its OS thread until it
// is reaped: the kernel sends the parent-death signal when the forking
// thread ends, not the process.
//
// [Transport] hands the SDK the pipes and watches what the SDK does not
// report: a stdout line that is not JSON-RPC, or longer than the frame
// cap, ends the session with a protocol error that quotes the line; a
// response to no request in flight is logged; closing tells the server to
// cancel the requests still unanswered. Beside the SDK it keeps a raw call
// channel ([Transport.Raw], package rawrpc) whose answers are taken out of
// stdout before the SDK reads it. The quote of a line that breaks the
// protocol counts offsets in what the SDK read: after raw answers it may
// quote a neighbouring line.
//
// # Concurrency
//
// A Process is safe for concurrent use. It owns three goroutines: the reap
// (locked to the thread that forked the child; ends when the child exits), the stderr drain (ends at EOF or when Close
// closes the pipe) and the close sequence (started once, by Close or by the
// SDK closing stdin; Close waits for it). None of them outlives Close.
package proc
