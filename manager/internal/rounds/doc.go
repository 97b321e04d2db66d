// Package rounds hands a tool call that a server answered with an input
// required result (protocol 2026-07-28: the server asks its client
// something, and the client calls again with the answers) over to the
// go-sdk's client, which serves the rest of it as it serves its own
// calls: it answers the input requests through the client's handlers and
// sends the later rounds. Nothing is sent twice: the round the server
// already answered is answered to the go-sdk from memory.
//
// [Continue] connects a session of the client to a responder in memory
// that answers server/discover with the server's protocol version, the
// call's first round with the result the server sent, and forwards each
// later round, as the go-sdk encoded it, to the server through the
// caller's send function.
//
// # Concurrency
//
// Continue may be called from any number of goroutines at once; each call
// owns its session, its responder goroutine and the goroutines forwarding
// its rounds, and waits for all of them before it returns. The responder's
// mutex guards only the first error of send; its in-memory connection
// serialises its own writes.
package rounds
