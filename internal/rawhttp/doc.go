// Package rawhttp makes one JSON-RPC request raw over a streamable HTTP
// MCP session that the go-sdk's client opened: it POSTs the request's
// bytes with the session's headers through the same http.Client (so the
// server's headers, credentials and OAuth tokens apply as they do to the
// go-sdk's requests) and returns the server's result as it wrote it.
//
// The answer may come as one JSON body or on an event stream. On a stream,
// what the server sends before the answer is handed to the caller's
// [Peer]: notifications in the order they came, on the caller's
// goroutine, before the result is returned; requests (the server asking
// its client something) each on a goroutine of their own, whose answer is
// POSTed back on the session. A call whose context ends before its answer
// tells the server with notifications/cancelled, as the go-sdk does.
//
// A call fails as the go-sdk's StreamableClientTransport fails it: a
// stream cut before the answer is resumed from its last event id (a GET
// with Last-Event-ID, on that transport's schedule and limits); a
// transient status is [ErrRejected], which leaves the session be; what
// makes that transport give its session up is [ErrBroken], which tells
// the caller to end the session. The errors are worded as the go-sdk
// words them.
//
// Request ids are strings starting with rawrpc.IDPrefix: the go-sdk's
// client numbers its requests, so a raw request never shares an id with
// one of the session's own.
//
// [Watch] reads a response stream someone else reads (the go-sdk's
// transport), showing each message on it to a watcher before anything
// after it is handed on: what the watcher counts is counted before the
// reader can have decoded what the server sent next.
//
// # Concurrency
//
// [Session.Call] may be called from any number of goroutines at once. The
// goroutines answering a call's server requests belong to that call: it
// cancels them and waits for them before it returns. A body [Watch]
// returns is read by one goroutine at a time, which its watcher runs on.
package rawhttp
