// Package ask carries what an MCP server asks of its client — elicitation
// (a form or a URL for the user), sampling (a model completion) and roots
// (the directories it may work in) — to whoever can answer.
//
// The manager declares a client capability to a server only when some
// [Answerer] offers it. When a server asks, the manager tries, in order:
// the caller whose call the request provably belongs to (a gateway client,
// which may ask its own client in turn; see manager.QuestionsMode and
// [SoleClient]), the server's own roots from its spec, and the host's
// answerer (Lua handlers, then the person at the REPL). An answerer that cannot answer returns [ErrNoAnswer] and the next
// one is tried; when none can, the server gets the protocol's error.
// An accepted answer to a form elicitation takes the form's defaults for
// the fields it leaves out ([WithDefaults]), and is checked against the
// requested schema before it is sent ([CheckElicitation]).
//
// The manager asks a caller something of its own too: a call that needs an
// OAuth login, made by a caller that is a [URLOpener] able to open URLs,
// sends that caller the authorization link as a URL-mode elicitation.
package ask
