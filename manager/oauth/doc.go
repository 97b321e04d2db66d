// Package oauth logs the host in to remote MCP servers that are behind
// OAuth 2.1, keeps their tokens and puts them on the wire.
//
// # Model
//
// A [Keeper] holds one [Source] per server. A Source is the server's grant
// as the [Store] keeps it on disk: the client registration, the token
// endpoint, the scopes granted and the tokens, one grant per authorization
// server (issuer) the server has trusted, and which of them is current.
// [Source.Transport] is the RoundTripper under a connection's HTTP client:
// it adds the access token, refreshes it shortly before it expires, and
// turns the server's refusals into typed errors:
//
//   - a 401 whose protected resource metadata names another authorization
//     server than the current grant's switches to the grant the Store
//     holds from that one, if any, and otherwise needs a login (there);
//   - a 401 for a token the server no longer takes is answered by one
//     silent refresh; the request that met it fails with
//     [TokenRefreshedError] and is never sent again by this package (it may
//     have been a tool call), and the next request carries the new token
//     (so does one met by a switch, or by a step-up that a login made
//     meanwhile, here or by another process, already grants);
//   - a 401 with no token, a 401 right after such a refresh, a refresh the
//     authorization server refuses, and a 403 insufficient_scope (step-up)
//     that no login made since grants fail with [LoginRequiredError],
//     which says why a login is needed, and close the channel of
//     [Source.LoginNeeded] so that a connected session is ended rather
//     than left answering errors.
//
// A server may ask for a login on any request, not only the first (some
// answer the handshake to anyone and challenge tools/list or a call). Each
// refusal that needs a login is kept in the Store as the record's
// [Challenge], and a login follows the one kept, whichever process met it;
// with none kept it opens a session without a token and goes as far as it
// takes to be challenged. A login that lands forgets the challenge.
//
// Nothing here ever waits for a person: only [Keeper.Login] opens a browser
// and waits for the redirect, and only when a user asked for it (mcpvisor
// login, mcp_login). Login uses the go-sdk's auth.AuthorizationCodeHandler
// for discovery, registration, PKCE, the iss check and the code exchange,
// and keeps what it learnt (including a dynamic registration, so that the
// next login reuses it instead of registering again).
//
// # Secrets
//
// Tokens and client secrets live in the Store's files (directory 0700,
// files 0600) and in memory only. No error or String method of this
// package includes them, and the token endpoint's error bodies are reduced
// to their error code and description.
//
// # Concurrency
//
// A Keeper and its Sources are safe for concurrent use. Each Source keeps
// its state under one mutex that is never held across I/O: a refresh is
// single-flight (one request goes to the token endpoint, the others wait
// for its outcome on a channel) and the Store is written outside the lock
// by whoever produced the new state, last writer wins. The refresh runs
// on a goroutine of its own, bounded by a timeout, so that a request that
// gives up meanwhile does not lose a rotated refresh token. Login runs on
// its caller's goroutine; the loopback listener it starts is stopped and
// waited for before it returns, and the browser commands it runs are
// given a moment to exit; a browser that keeps running is left to the
// user, and reaped by package browser when it exits.
package oauth
