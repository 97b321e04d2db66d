// Package peer reads who an HTTP request comes from and what bearer token
// it sends, as the gateway's token check and the web console's login both
// count and compare them: one rule for both, so that a peer shut out of
// one is recognised by the same address in the other.
//
// # Concurrency
//
// Its functions keep no state and may be called from any goroutine.
package peer
