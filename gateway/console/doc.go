// Package console is mcpvisor's web console: HTML pages, rendered on the
// server from embedded templates, that show every server the manager
// keeps (state, countdown to the next attempt, circuit, health, counts,
// requests, errors, latency, last error), a server's tools and recent
// events, the gateway's clients and the event stream, and let whoever
// holds the token reconnect, enable and disable a server and try a tool.
//
// The gateway serves it at /ui (gateway.HTTPOptions.Console) behind its
// Host and Origin checks; the console checks the token itself, since a
// browser cannot send a bearer header on a page load.
//
// # Access
//
// When a token is set, a request without it (as "Authorization: Bearer",
// or as the console's login cookie) sees the login form only. Posting the
// token sets an HttpOnly, SameSite=Strict cookie holding a signed, random
// session id that expires after SessionTTL; the key that signs it is made
// when the console is, so a console made for another token (a restart, a
// new listener) knows none of the old cookies. A peer that keeps posting
// wrong tokens is shut out for longer and longer. Without a token (a
// loopback listener) everyone who passes the gateway's checks may act.
//
// Every action is a POST carrying the session's CSRF token (a MAC of its
// session id), on top of SameSite=Strict and the gateway's cross-origin
// protection.
//
// # Live updates
//
// /ui/stream is a server-sent events stream: one "row" message with a
// server's row rendered anew whenever an event about it is published on
// the manager's bus, and one "event" message per event. The page's script
// (embedded, no library) replaces rows in place and counts down to each
// server's next attempt from the time the row carries; it never polls.
//
// # Concurrency
//
// A Console is safe for concurrent use. Each stream is served on its
// request's goroutine, with a subscription of its own to the bus, until
// the client goes away or Close is called. The wrong-login table has a
// mutex of its own; everything else is read from the backend on each
// request.
package console
