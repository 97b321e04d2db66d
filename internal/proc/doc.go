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
// [Transport] hands the SDK the pipes and watches what the SDK does not
// report: a stdout line that is not JSON-RPC, or longer than the frame cap,
// ends the session with a protocol error that quotes the line; a response
// to no request in flight is logged; closing tells the server to cancel
// the requests still unanswered.
//
// # Concurrency
//
// A Process is safe for concurrent use. It owns three goroutines: the reap
// (ends when the child exits), the stderr drain (ends at EOF or when Close
// closes the pipe) and the close sequence (started once, by Close or by the
// SDK closing stdin; Close waits for it). None of them outlives Close.
package proc
