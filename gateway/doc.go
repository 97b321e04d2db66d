// Package gateway serves the MCP servers a manager keeps connected to MCP
// clients (Claude Desktop, Claude Code, Cursor, VS Code, agents) as MCP
// servers of its own, on the go-sdk's server side: one client on stdio
// (Gateway.ServeStdio) or many over streamable HTTP and the legacy
// HTTP+SSE transport (Gateway.Listen, Gateway.Handler).
//
// # Endpoints
//
//	/mcp                 every server's tools, prompts and resources
//	/servers/NAME/mcp    one server under its own names
//	/toolsets/NAME/mcp   a toolset's tools (SetToolsets), named as on /mcp
//
// and /sse, /servers/NAME/sse, /toolsets/NAME/sse for legacy clients. Each
// endpoint is an mcp.Server made on first use.
//
// HTTPOptions.Console, when set (the web console, package
// gateway/console), is served at /ui and below: behind the Host and
// Origin checks but not the bearer token check, since a browser cannot
// send the header; it asks for the token itself, and reports the
// requests it lets in with Authenticated.
//
// On stdio, what the client writes cannot end its session: a line that is
// not JSON is answered with a parse error (-32700), one that is JSON but
// no JSON-RPC message, a batch, or longer than 16 MiB (read to its end
// without being kept) with an invalid request error (-32600), under the
// request's id when it can be found; only the end of the input ends the
// session.
//
// # Names
//
// On /mcp a tool is offered as server__tool, with every character outside
// [a-zA-Z0-9_-] replaced by "_" and the whole kept within a budget (49 by
// default, so that Claude Code's own "mcp__mcpvisor__" in front still fits
// the model APIs' 64) by a hash suffix, so that every client accepts every
// name. SetClientBudgets gives some clients, by the name they give, a
// budget of their own: their lists and calls are translated both ways. A
// name is stable while its tool is listed, whatever other servers do; two
// tools that would share a name both stay (a name_collision event says
// so). A server's spec may choose its prefix, hide tools and rename them
// (expose.Rules, declared with each server). Prompts are named the same way; resources keep their
// URIs.
//
// # What is offered
//
// A client's first requests are answered with every server that is going
// to be there: asked before every declared, enabled server has had its
// first say (connected, failed, backing off, waiting for a login), a
// list, a read of a resource, a prompt, a completion or a call of a tool
// not listed yet waits for it (on a server's own endpoint, for that
// server), each server for at most Options.Wait from its start. A server
// heard from later is announced with list_changed.
//
// A server that stays down until someone acts (disabled, failed for
// good, waiting for a login) or is on its way out offers nothing: its
// tools, prompts and resources leave every endpoint, with list_changed,
// and come back when it recovers. What leaves stays listed for half a
// second first (its calls say why the server is down), so that a server
// restarted, or disabled and enabled again, changes no client's lists,
// and a burst of removals is one list_changed; what is added is listed
// at once. A server between attempts keeps its last known items; their
// calls say when the next attempt is.
//
// On /mcp the resource mcpvisor://status (StatusURI), and the tool
// mcpvisor_status (StatusTool, unless Options.StatusTool is off), say in
// plain words what each server is doing, why it is down and when it is
// tried again, so that a model missing a tool can tell its user why.
// Neither waits for the servers.
//
// # Modes
//
// Each client session has a mode, chosen when it starts and kept for the
// session (some clients never relist): Options.ModeFor (SetModeFor) may
// choose by the client's name, version and endpoint, else the toolset's
// Mode, else Options.Mode. In direct mode (the default) the client lists
// every tool. In search mode it lists search_tools, describe_tools and
// call_tool (package toolsearch), the tools the user pinned
// (expose.Rules.Pin) and the status tool: search_tools ranks the tools
// its endpoint serves it, with the user's tags, aliases and descriptions,
// and describe_tools and call_tool take the names its direct list would
// have. In code mode it lists run_lua alone, whose chunk Options.Code
// runs (the gateway runs no Lua) with a CodeEnv of the client's tools.
// Either way, a tool called through a meta-tool is sent down the same
// request chain as a direct call of it, on the client's session: named,
// validated, limited, routed, reported and cancelled exactly as one; a
// tool its endpoint does not serve the client (hidden, outside its
// toolset) is neither found nor called. Options.MetaPrefix renames the
// meta-tools. ModeCosts counts, in tokens, what each endpoint's list
// costs in each mode, and says the mode its clients get by default; it
// waits for the gateway's goroutine to take what was handed over before
// it, so it must not be called from that goroutine.
//
// # Calls
//
// completion/complete goes to the server that owns the prompt (by the
// name the client sees) or resource template it names, routed as a call.
//
// A tools/call is forwarded with manager.Manager.Call and FailFast: a
// server that cannot be reached answers at once with an isError result
// led by the error's code, naming the server and the operation, and then
// saying in plain words, for a model and its user, whether retrying helps
// and when (the manager's remedy, worded here: never a Lua call or a
// command, never another client's name); a server reconnecting
// after a crash is waited for, up to the call's timeout. Progress goes back
// to the calling client under its own token, before the result; a client's
// cancellation cancels the upstream request; a W3C traceparent in _meta
// continues into the upstream call. Server log messages reach the clients
// of the endpoints that serve that server, at each client's logging level
// (those sent while serving a client's call go to that client on the
// call's own stream, before its result; on 2026-07-28 the level is the
// one the call's _meta names, and without a session the stream is that
// of the client's request waiting on the call);
// resource updates reach the clients subscribed to the resource, every one
// and in order.
//
// # What servers ask
//
// While a call is in flight its server may ask the client for a form or
// a visit to a URL (elicitation), a completion (sampling) or its roots.
// Each call carries an answerer for the client that made it
// (CallOptions.Answerer), and the gateway declares when it starts that
// its clients may answer (CallersAnswer), so that servers connecting
// afterwards are told their client can. The answerer asks only what the
// client declared it can answer and leaves anything else to the host
// (ask.ErrNoAnswer); requests and answers pass through untouched. A
// client on a protocol before 2026-07-28 is sent the request on its
// call's own response stream, and it is cancelled when the server's
// request or the call ends. The go-sdk refuses to send a request to a
// client on 2026-07-28 (its default over stdio): such a client gets what
// the server asks as the input requests of its call's result, and
// answers by calling again with the request state, while the call runs
// on upstream. A per-client server that asks between its client's calls
// (the manager keeps the last call's answerer) reaches the client on its
// session where the transport can carry it, and the host otherwise.
// Prompts and resources carry no answerer: what a server asks while
// serving them goes to the host.
//
// Each client session is named "name/version (id)", with an id unique
// among the gateway's sessions, for all its calls: a per-client server
// gives it a session of its own, which ReleaseClient frees when the
// client's session ends.
//
// Both generations are served on each HTTP endpoint. A request of the
// sessionless one (a protocol version header of 2026-07-28 or later, no
// session id) goes to the go-sdk's handler without sessions, which makes
// a session for that request alone: the gateway records it, never
// announces it, and checks nothing the go-sdk does not (it refuses a
// request whose Mcp-Method or Mcp-Name header disagrees with its body).
// The calls of such clients, which span requests when their server asks
// something, run under a holder: one record per endpoint, client name and
// version, which counts and caps them and keeps their request states.
// Sessionless clients of the same name and version share their holder:
// one cap on calls (Options.MaxClientCalls) and, behind a per-client
// server, one server session. A holder counts against Options.MaxSessions
// while it lives: from a call's first request until it has no call, no
// request and no round trip left, when it goes and ReleaseClient frees
// its client; a round trip its client does not come back to within the
// session timeout is given up and its call cancelled upstream. With the
// fast path on, such a client's tools/call is served ahead of the go-sdk's
// handler (no session is made for it), under the same holder, and its
// answer is what that handler would send.
//
// # Clients that leave, and bounds
//
// A call ends when its client can no longer take the answer: the client
// cancels it, ends its session (DELETE, which answers the call with a
// JSON-RPC error first), closes the HTTP request carrying it, or loses
// the stream of its SSE session; the upstream request is cancelled then.
// Sessions are capped (Options.MaxSessions: initialize is refused beyond
// it, an open session is never closed to make room) and an HTTP session
// idle for HTTPOptions.SessionTimeout is closed; one client's requests in
// flight upstream are capped (Options.MaxClientCalls), however it sends
// them. Over HTTP the guard checks Host (on loopback), Origin and the
// token before anything answers; a peer that keeps sending wrong tokens
// is shut out for longer and longer; connections are capped, more
// tightly before they authenticate, and request headers, bodies and idle
// connections have deadlines. Shutdown lets calls in flight finish within
// a grace, then answers the rest with an error.
//
// # Concurrency
//
// One goroutine (run) owns the endpoints and the namers: it follows the
// manager's events and, after each burst, builds a view of what the
// servers offer and makes every endpoint's lists match it (the SDK sends
// one list_changed per burst per endpoint). Endpoints are made by asking
// it (do); one already made is found in the map of them it publishes,
// without asking. Request handlers, on the SDK's goroutines, read only
// what it publishes atomically: the endpoints made, the current view,
// each endpoint's routes, the
// toolsets and the servers still waited for. Toolsets are snapshots handed over with SetToolsets (a toolset
// that a function decides is evaluated by its owner, which hands over the
// tools it chose): the run goroutine takes the newest when it is poked and
// never waits on whoever made them. What servers say (log messages,
// resource updates) comes on the gateway's own lossless listener of the
// manager's notices (package manager/notify) and is sent by one goroutine
// (deliver) in order: while it keeps up the manager waits for it rather
// than drop a resource update, and if it ever falls a stall behind, what it
// missed comes as a Lost notice, answered by sending every resource its
// clients subscribed to on that server as updated and telling them how many
// log messages they missed. It reads the endpoints from a list the run
// goroutine replaces as it makes them, and the calls in flight that carry
// their server's log messages (logRelays, under its own mutex). A call of
// a client that set a logging level (on 2026-07-28, whose _meta names
// one) asks deliver (flush) to send what its
// listener held then, and waits for it, then stops relaying, before its
// result goes out; deliver looks for such asks between notices, so a
// flood delays them by one notice. Each call with a progress token has
// a goroutine of its own that sends its progress to the client, on
// either path, and ends before the call's result goes out; a call of a
// client on 2026-07-28 runs
// upstream on a goroutine of its own, counted among its session's calls.
// The holders of sessionless calls are made, and pinned for the request,
// on the request goroutine under the session table's mutex; they are
// dropped under that mutex (then the holder's own) by whoever ends their
// last call, request or round trip, or by the timer of a round trip left
// waiting (which runs on its own goroutine), never while the gateway
// shuts down: Shutdown ends those left.
// A stdio session reads its lines on one goroutine at a time, which
// answers the lines it refuses itself and cancels the calls the client
// cancels; it never waits on anything but its input and the go-sdk
// taking a line. With the fast path on, the reader that takes a call
// passes the reading on (to the one goroutine waiting for its turn, or a
// new one) and makes the call itself (counted among the session's calls,
// ended with it), then waits for its turn, or ends if another goroutine
// waits already or the session is closed.
// A fast call of a client on 2026-07-28 runs upstream on one more
// goroutine, as the go-sdk path's round trip does; that goroutine and the
// call's own hand its result over under a mutex of their own
// (tripHandoff), to the request or, once the request has answered with
// input requests, to the round trip.
// Every write is one whole line under one lock. Each client session has a watcher that, when the session ends, cancels
// its calls, waits for them to return, publishes client_disconnected and
// calls ReleaseClient, once. A call counts among its session's calls until
// its answer has been written (the go-sdk ends the request's context
// then), so that Shutdown, which waits for them, closes a session only
// after its answers went out. The HTTP layer keeps, for the calls, the
// context of the request carrying each (a token in a header the go-sdk
// hands to handlers) and of each SSE session's stream (a context value);
// the wrong-token table and the connection counts each have a mutex of
// their own. An endpoint's tool index is made by the run goroutine the
// first time a client in search or code mode needs it, and kept in step
// with the endpoint's tools there; searches read its latest snapshot
// without waiting. A session's mode is chosen once (sync.Once) on the
// client's request goroutine, where the mode function runs, no lock held.
// A run_lua chunk runs on its call's goroutine; its calls go down the
// chain there. A call on the fast path writes its response on its
// request's goroutine; what its server asks meanwhile is written on the
// same response from the manager's goroutine asking it, whole events under
// the response's own mutex, and the client's answer, arriving on another
// request, is handed over through a buffered channel the question waits
// on (the session's mu guards the table of questions waiting). A
// sessionless call on the fast path waits on its request's goroutine for
// the call, made upstream on a goroutine of its own, as a round trip's
// (fasttrip.go). Close stops them all and waits: run, deliver and the
// watchers.
package gateway
