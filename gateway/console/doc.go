// Package console is mcpvisor's web console: HTML pages, rendered on the
// server from embedded templates, that show every server the manager
// keeps (state, countdown to the next attempt, circuit, health, counts,
// requests, errors, latency, last error), a server's tools and recent
// events and its last stderr lines, the gateway's clients (with their
// toolset, mode and calls in flight) and the event stream, and let
// whoever holds the token reconnect, enable and disable a server, try a
// tool, start a server's OAuth login and reload the config.
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
// new listener) knows none of the old cookies. A peer that keeps sending
// wrong tokens (to the form, or as bearer tokens) is shut out for longer
// and longer; a cookie of an earlier login still works from there. Without a token (a
// loopback listener) everyone who passes the gateway's checks may act.
// Options.ViewToken is a second token that may only look: its sessions
// are shown no action form and every action refuses them.
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
// the client goes away or Close is called. The count of wrong logins (a
// peer.Guessers) is safe for concurrent use; everything else is read
// from the backend on each request.
//
// A reload or a login started from a page runs on a goroutine of its own
// after the page has answered; the console keeps the latest of each
// (under a mutex of its own, each task's output under the task's) to
// show. Close ends the logins; a reload runs to its end, since it may be
// what closes this console (a listener moved).
package console
