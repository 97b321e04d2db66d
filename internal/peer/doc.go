// Package peer reads who an HTTP request comes from and what bearer token
// it sends, and counts a peer's wrong tokens, as the gateway's token check
// and the web console's login both do: one rule for both, so that a peer
// shut out of one is recognised by the same address in the other, and
// slowed by the same schedule.
//
// # Concurrency
//
// Of and Bearer keep no state. A Guessers is safe for concurrent use: one
// mutex guards its table, and nothing is called under it.
package peer
