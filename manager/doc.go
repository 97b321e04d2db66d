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
// [Status] snapshot (atomic swap) and one event on the [events.Bus], with a
// typed payload of this package ([Connecting], [Connected], [BackingOff],
// [CircuitChanged], …) whose Fields are what Lua hooks and the log see:
// added → connecting → connected → (disconnected) backoff → connecting … →
// closing → removed, plus open (circuit), failed, unauthorized (a 401: not retried until a
// reconnect), idle and disabled.
//
// Failures are paced by the [Backoff] schedule until the [Breaker] sees
// its number of consecutive failures within its window: the circuit opens
// (state open) and only one probe attempt runs every OpenFor. A session
// that is lost within Backoff.Max of connecting has not proven itself and
// counts as a failed attempt too (a crash loop right after the handshake
// backs off and trips the breaker); the loss of a proven session starts
// the backoff schedule but is no failed attempt for the breaker. The
// breaker, the backoff and the retry limit form one retry policy, pure
// (it is told what failed and when, and answers: back off, open the
// circuit, or give up); the supervisor goroutine alone feeds it and acts
// on its answers, so only it decides when to attempt.
//
// A failure that retrying cannot fix stops the retries at once: the
// server refused the credentials or wants a login ([ErrUnauthorized],
// state unauthorized), or a stdio server's program or directory is not
// there ([ErrCannotStart], state failed). The server then waits for a
// reconnect (or a login), and requests fail at once with that sentinel in
// their error's chain.
//
// While connected, the supervisor pings the session every health interval
// (on its own goroutine, bounded by the health timeout; -32601 means the
// server has no ping, and it is then judged by the session and the server
// silence timeout), closes it when the idle timeout passes with no request
// in flight (state idle: the next request wakes it), and re-lists what
// list_changed notifications announce. Requests pass a gate that counts
// them, so neither the idle close nor a disposal closes a session under a
// request; disposal drains the gate up to [Options.DrainTimeout] and then
// abandons what is left.
//
// Callers never connect. [Manager.Call] on a server that is connecting or
// backing off waits for the supervisor's attempt, up to the call's timeout,
// so connecting is single-flight by construction; other goroutines ask the
// supervisor for things (reconnect, enable, disable, a new HTTP session,
// waking an idle server) by setting a flag and kicking it, so repeated
// requests coalesce. [Manager.CallRaw] is Call with the arguments and the
// result as raw JSON, for a spawned stdio server or a streamable HTTP one:
// the request goes out on the process's raw call channel beside the go-sdk
// session (package rawrpc), or as a POST on the go-sdk session's HTTP
// session, through its own HTTP client (package rawhttp), with the same
// checks, limits, statistics and events as Call. Over HTTP, what the
// server sends on the call's response stream is handled on the calling
// goroutine (notifications, in order, before the call returns) and on
// goroutines of the call's own (the server's questions), which the call
// waits for. A call whose server, on protocol 2026-07-28, answers with
// input requests is handed to the connection's go-sdk client for its
// remaining rounds (package rounds): a session of that client in memory,
// whose responder answers the first round from memory and forwards the
// later ones on the raw path; the call waits for all of it.
//
// [Options.MaxConnections] caps the connections held at once: an attempt
// takes a slot before it starts and its connection gives it back when it
// closes (a failed attempt at once). A server beyond the cap waits in
// connecting with [Status.WaitingFor] [WaitSlot] (and [Status.Waiting]
// saying so), in line (joined at Add, so in the order of declaration),
// until a slot comes free; a caller whose timeout ends first gets
// CONNECTION_LIMIT, and an idle server nobody waits for any more leaves
// the line.
//
// [Options.MaxConnecting] caps the attempts in flight, apart from that: an
// attempt takes a turn before it starts (after its connection slot, if
// any) and gives it back when it ends, connected or not. A server beyond
// the cap waits in connecting with [Status.WaitingFor] [WaitTurn], in a
// second line joined at Add, so thousands of declared servers start a few
// at a time.
//
// # Sessions per client
//
// A server declared session = "per_client" keeps its own session (it lists
// the server's tools and serves calls without a [CallOptions.Client]) and
// one session per client that calls it, at most MaxSessions. Each client
// session is run by a supervisor of its own, on the same code, outside the
// table of servers: its events carry "client", and session_opened and
// session_closed mark its start and end. [Manager.ReleaseClient] gives a
// client's sessions back (its calls are abandoned); so does its idle
// timeout. A session given back counts toward the limit until its process
// is gone, and no call is given it.
//
// # What servers ask
//
// Elicitation, sampling and roots requests from a server are answered by
// the [ask.Answerer]s that offer them (package manager/ask): the caller
// whose call carries the request (2026-07-28 input requests), the callers
// with calls in flight on that session when they are all one client's, the
// owner of a client session, the server's own roots, and the host's
// answerer ([Manager.SetAnswerer]). A capability is declared to a server
// only when one of them offers it ([Manager.CallersAnswer] for callers'),
// at connection. Each answered request is an event (elicitation, sampling,
// roots) without the answer. A session that declared roots has a worker
// goroutine, owned by the connection, that keeps the SDK client's list of
// roots and announces changes ([Manager.RootsChanged]).
//
// # What servers say
//
// A server's log messages, resource updates, list changes and progress are
// not events: they are typed notices (package manager/notify) handed to
// every listener of [Manager.Notices], in the order the session delivered
// them. A lossless listener (the gateway's) makes the server's notification
// handler wait for room while it keeps up, so no resource update is
// dropped; one that stalls is reported what it missed. Only log messages
// (and progress as observers see it) are rate-limited, per server, at 500
// a second; a flood is said once with a notifications_dropped event, then
// counted every 5 seconds while it lasts. The call's own progress goes to
// the call, unlimited. A call of a stdio or streamable HTTP server returns
// once the log messages the server sent before its result have been handed
// to the listeners (its process counts those it reads, or the go-sdk
// client's reading of each HTTP response stream those on it, and the
// session those it handled; a message the SDK drops unhandled is waited
// for a second at most, once). Servers are asked for log messages at info, or at the most
// verbose level a caller holds with [Manager.HoldLogLevel] or a call in
// flight wants ([CallOptions.LogLevel]); the supervisor asks each session
// again when that changes, and a call that wants more than its session
// was asked for waits until the server has answered for it (on 2026-07-28
// each call's _meta names the level instead).
//
// # Resources and logins
//
// [Manager.Subscribe] holds a resource subscription for callers; the
// supervisor subscribes each new session (on 2026-07-28 each subscription
// is a stream, run by a goroutine of the connection that its close waits
// for). A remote server behind OAuth (package manager/oauth) gets its
// token from a transport under the HTTP client; without one it is
// unauthorized (not retried) until [Manager.Login], and an unauthorized
// supervisor watches the stored token for a login made elsewhere. A
// refusal on any request of a session, not only the first, ends it the
// same way. A call refused for want of scopes waits, within its time, for
// the login that asks for them and is then sent again, once (stepup.go).
//
// # Processes
//
// Stdio servers run in their own process group with pipes the host owns;
// stderr is always drained (the last 64 KiB are kept and shown when the
// process dies during connect; at debug level each line is logged, at most
// 100 a second per server). A stdout line that is not JSON-RPC, or longer
// than MaxFrameBytes, ends the session as a protocol error that quotes the
// line's first bytes. Closing a server closes stdin, waits
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
// An error says what happened, never what to do about it in anyone's
// words: what would help is its [Remedy] (and a down server's
// [Status.Remedy]), data that each face words for its reader, found with
// [RemedyOf]. The manager knows no Lua, no command line and no config file.
//
// # Telemetry
//
// With [Options.TracerProvider] and [Options.MeterProvider] (or the otel
// globals) the manager records the spans mcp.add,
// mcp.connect_loop with its mcp.connect_attempt and mcp.backoff_wait
// children, mcp.tool_call (a child of the caller's span, its W3C trace
// context sent in the request's _meta) and mcp.remove — and the metrics
// mcpvisor.requests, mcpvisor.request.duration, mcpvisor.errors,
// mcpvisor.connections and mcpvisor.reconnects (telemetry.go).
//
// # Concurrency
//
// Manager is safe for concurrent use. Its mutex guards only the map of
// servers, and a per-client server's table of client sessions has a mutex
// guarding only that table; neither is held while calling out.
//
// Each server's supervisor goroutine owns, alone and without locks: its
// retry policy, its connection attempts (dial or spawn, handshake, first
// discovery), and the session it holds, whose loop serves one concern per
// channel (the connection's end, health pings and silence, the idle
// timeout, what other goroutines asked for). Each health ping runs on a
// goroutine that the loop owns and waits for before it returns. The
// goroutine is the single writer of the server's snapshot; readers load
// it atomically and wait for changes on a channel that is closed on every
// publish. Events are published after the snapshot is stored, so an
// observer that sees an event can already read the state it describes.
//
// Requests run on their callers' goroutines. What routes them while they
// are in flight is safe for concurrent use, each table behind a mutex of
// its own that is never held while calling out: the gate that admits them
// to the session, the table that abandons them when the server goes away
// and says who answers what the server asks meanwhile, and the progress
// routes by token, whose callbacks run on the SDK's goroutine and must not
// block. The tags of calls' HTTP response streams (which call a server's
// question came with) are one map behind its mutex, written by the HTTP
// transport as a stream opens and closes and read by the SDK's goroutine
// that hands the question over.
//
// Every goroutine has an owner that waits for it. [Manager.Close] waits for
// every supervisor, those of servers removed before it and still draining
// included. A supervisor's end waits for its connection's goroutines, its
// client sessions, the closers of timed-out attempts and its log limiter's
// report timer, then publishes removed and ends the mcp.remove span.
// Notices are published on the SDK's notification goroutine of the
// session, which may wait there for a lossless listener: at most a stall,
// and not past the server's removal.
package manager
