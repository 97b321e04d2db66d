// Package control lets a shell reach a running mcpvisor: `mcpvisor status`
// reads its servers and clients, `mcpvisor reconnect|enable|disable NAME`
// acts on one.
//
// Every host (the REPL, `serve`, `serve --http`) listens on a Unix socket of
// its own in an owner-only directory ([Dir]: $XDG_RUNTIME_DIR/mcpvisor, else
// the state directory), so the user's own instances are found without an
// address or a token and nobody else's can be reached. A gateway listening
// on HTTP serves the same API under /control/ behind its token, for an
// instance on another machine or user. The API is small JSON over HTTP:
//
//	GET  /control/v1/status                  a [Snapshot]
//	POST /control/v1/servers/NAME/ACTION     reconnect, enable or disable
//
// # Concurrency
//
// A [Server] serves each request on its own goroutine and calls its
// [Backend] from there: a Backend must be safe for concurrent use and must
// not block for long (it reads snapshots and sets flags). Close stops
// listening and waits for the requests in flight.
package control
