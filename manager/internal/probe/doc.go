// Package probe sends one server/discover request to a server outside the
// go-sdk's session: the health check of a session on the sessionless
// protocol generation (2026-07-28), where a server may answer ping with
// "method not found" and the go-sdk client has no way to send
// server/discover on a live session.
//
// Over stdio the request goes through the connection's raw call channel
// (package rawrpc), beside the SDK's own traffic; over streamable HTTP it
// is one raw request on the session (package rawhttp): a POST through the
// connection's own HTTP client (its headers, its login), carrying the
// headers the sessionless generation requires (Mcp-Protocol-Version,
// Mcp-Method). Either way the request carries the
// per-request _meta that generation requires, and a server's error answer
// comes back as a *jsonrpc.Error, as the SDK returns one.
//
// # Concurrency
//
// The functions hold no state of their own: each call is independent and
// safe to make concurrently with the session's traffic. A call ends when
// the answer arrives, the request fails, or its context ends (then the
// context's cause is returned).
package probe
