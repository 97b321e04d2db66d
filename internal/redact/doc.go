// Package redact keeps secret values out of text that is shown or sent.
//
// A server's declaration may take values from the environment (`${TOKEN}`
// in its command, env, URL or headers). mcpvisor shows the reference, never
// the value, wherever it describes the declaration; but a server can echo
// its arguments or environment on stderr, in an error message or in a
// line that breaks the protocol, and that text reaches status, events,
// logs and the errors every gateway client reads. [Secrets] rewrites each
// value found in such text back to its reference, in every encoding a
// careless program prints it in: as it is, quoted as a JSON or Go string,
// URL-encoded (either case of hex digits), or in base64.
//
// A value shorter than [MinLen] bytes is not hidden: it reveals little and
// would blank common words wherever they appear.
//
// A Secrets is immutable and safe for concurrent use; a nil *Secrets hides
// nothing. The package imports only the standard library.
package redact
