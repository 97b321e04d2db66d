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
// # Names
//
// On /mcp a tool is offered as server__tool, with every character outside
// [a-zA-Z0-9_-] replaced by "_" and the whole kept within a budget (64 by
// default) by a hash suffix, so that every client accepts every name. A
// name is stable while its tool is listed, whatever other servers do; two
// tools that would share a name both stay (a name_collision event says
// so). A server's spec may choose its prefix, hide tools and rename them
// (manager.Expose). Prompts are named the same way; resources keep their
// URIs.
//
// # Calls
//
// A tools/call is forwarded with manager.Manager.Call and FailFast: a
// server that cannot be reached answers at once with an isError result
// naming it, the operation and the next attempt; a server reconnecting
// after a crash is waited for, up to the call's timeout. Progress goes back
// to the calling client under its own token, before the result; a client's
// cancellation cancels the upstream request; a W3C traceparent in _meta
// continues into the upstream call. Server log messages reach the clients
// of the endpoints that serve that server, at each client's logging level.
//
// # Concurrency
//
// One goroutine (run) owns the endpoints and the namers: it follows the
// manager's events and, after each burst, builds a view of what the
// servers offer and makes every endpoint's lists match it (the SDK sends
// one list_changed per burst per endpoint). Endpoints are made by asking
// it (do). Request handlers, on the SDK's goroutines, read only what it
// publishes atomically: the current view, each endpoint's routes and the
// toolsets. A toolset's Filter runs on the run goroutine and must return
// promptly. Log messages are delivered by one goroutine with a bounded
// queue; each call with a progress token has a goroutine of its own that
// ends before the call returns; each client session has a watcher that
// publishes client_disconnected. Close stops them all and waits.
package gateway
