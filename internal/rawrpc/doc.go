// Package rawrpc is a raw call channel beside the go-sdk's session over
// one newline-delimited JSON-RPC stream (a stdio server's stdin and
// stdout).
//
// A [Conn] sits between the stream and the SDK. Its reader hands the SDK
// every line the server writes, untouched, except the responses whose id
// is in the channel's own id space (strings starting with [IDPrefix]; the
// go-sdk's client numbers its requests, so it never sends one): their
// bytes go to the [Conn.Call] waiting for them, and the SDK never sees
// them. Its writer writes the SDK's messages, and Call writes its
// requests, one whole line at a time under one lock, so lines never
// interleave.
//
// A call that ends before its answer (its context ends) tells the server
// with notifications/cancelled, as the SDK does; an answer arriving after
// that is dropped. When the stream ends (the server's stdout closed, or
// [Conn.Close]), the calls waiting fail with [ErrClosed] wrapping why.
//
// The reader reads an answer written plainly (as servers write them) by
// walking its members ([Members]) rather than decoding it; anything else
// it reads as json.Unmarshal does. Members serves the gateway's fast path
// the same way.
//
// # Concurrency
//
// A Conn is safe for concurrent use. Its reader is read by one goroutine
// at a time (the SDK's reader); it delivers answers on that goroutine,
// through a channel per call that never blocks. mu guards the calls
// waiting and whether the stream ended; writeMu serialises lines on the
// stream. Nothing is called under mu.
package rawrpc
