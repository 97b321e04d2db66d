package manager

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/endpoint"
	"github.com/mcpvisor/mcpvisor/internal/proc"
)

// Code classifies an [Error]; it is stable and meant for programs.
type Code string

// The error codes.
const (
	CodeInvalidConfig     Code = "INVALID_CONFIG"
	CodeNameConflict      Code = "NAME_CONFLICT"
	CodeServerNotFound    Code = "SERVER_NOT_FOUND"
	CodeServerDisabled    Code = "SERVER_DISABLED"
	CodeConnectionTimeout Code = "CONNECTION_TIMEOUT"
	CodeConnectionFailed  Code = "CONNECTION_FAILED"
	CodeCircuitOpen       Code = "CIRCUIT_OPEN"
	CodeConnectionLimit   Code = "CONNECTION_LIMIT"
	CodeToolNotFound      Code = "TOOL_NOT_FOUND"
	CodePromptNotFound    Code = "PROMPT_NOT_FOUND"
	CodeAmbiguousTool     Code = "AMBIGUOUS_TOOL"
	CodeInvalidArguments  Code = "INVALID_ARGUMENTS"
	CodeInvocationFailed  Code = "INVOCATION_FAILED"
	CodeClosed            Code = "CLOSED"
)

// Error is the error type of every manager operation. It names the server
// and the operation, so a message read in a log is actionable on its own:
//
//	server "git": tools/call "status": timeout after 1s
//
// Test for a code with errors.Is against the sentinels below
// (errors.Is(err, manager.ErrServerNotFound)) or with errors.As.
//
// What would make the operation succeed is Remedy, as data: the message
// says what happened and never how to fix it, since each reader (a Lua
// user, a shell user, a model behind the gateway) is told in its own
// words.
type Error struct {
	Code   Code
	Server string // "" for host-wide errors
	Op     string // e.g. `connect`, `tools/call "echo"`
	Err    error  // the cause; its text is the message's tail
	Remedy Remedy // the zero Remedy when none is known
}

func (e *Error) Error() string {
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.Server != "" && e.Op != "":
		return fmt.Sprintf("server %q: %s: %s", e.Server, e.Op, msg)
	case e.Server != "":
		return fmt.Sprintf("server %q: %s", e.Server, msg)
	case e.Op != "":
		return fmt.Sprintf("%s: %s", e.Op, msg)
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is a code sentinel (an *Error with only Code
// set) of the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Server == "" && t.Op == "" && t.Err == nil && t.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrInvalidConfig     = &Error{Code: CodeInvalidConfig}
	ErrNameConflict      = &Error{Code: CodeNameConflict}
	ErrServerNotFound    = &Error{Code: CodeServerNotFound}
	ErrServerDisabled    = &Error{Code: CodeServerDisabled}
	ErrConnectionTimeout = &Error{Code: CodeConnectionTimeout}
	ErrConnectionFailed  = &Error{Code: CodeConnectionFailed}
	ErrCircuitOpen       = &Error{Code: CodeCircuitOpen}
	ErrConnectionLimit   = &Error{Code: CodeConnectionLimit}
	ErrToolNotFound      = &Error{Code: CodeToolNotFound}
	ErrPromptNotFound    = &Error{Code: CodePromptNotFound}
	ErrAmbiguousTool     = &Error{Code: CodeAmbiguousTool}
	ErrInvalidArguments  = &Error{Code: CodeInvalidArguments}
	ErrInvocationFailed  = &Error{Code: CodeInvocationFailed}
	ErrClosed            = &Error{Code: CodeClosed}
)

// ErrTimeout is in the chain of every error caused by a deadline of ours
// (connect, request, an HTTP server's response headers), whatever its code.
var ErrTimeout = endpoint.ErrTimeout

// timeoutError says which limit ran out: "timeout after 1s".
type timeoutError struct{ after time.Duration }

func (e timeoutError) Error() string        { return fmt.Sprintf("timeout after %s", e.after) }
func (e timeoutError) Is(target error) bool { return target == ErrTimeout }

func newError(code Code, server, op string, err error) *Error {
	return &Error{Code: code, Server: server, Op: op, Err: err}
}

func errorf(code Code, server, op, format string, args ...any) *Error {
	return &Error{Code: code, Server: server, Op: op, Err: fmt.Errorf(format, args...)}
}

// with sets e's remedy and returns e.
func (e *Error) with(r Remedy) *Error {
	e.Remedy = r
	return e
}

// ErrLoginDeclined is in the chain of the error of a call whose login was
// sent to its client (a login link to open), which declined or dismissed
// it.
var ErrLoginDeclined = errors.New("the login was declined")

// declinedError is a login link the client answered with action
// (decline or cancel).
type declinedError struct{ action string }

func (e declinedError) Error() string {
	return fmt.Sprintf("the user answered %q", e.action)
}
func (e declinedError) Is(target error) bool { return target == ErrLoginDeclined }

// ErrCancelled is in the chain of every request error caused by the caller
// giving up (its context cancelled: Ctrl-C at the REPL, a client's
// cancellation): not the server's failure.
var ErrCancelled = errors.New("cancelled by the caller")

// cancelledError is a request the caller cancelled, with the cancel's cause.
type cancelledError struct{ cause error }

func (e cancelledError) Error() string        { return "cancelled: " + e.cause.Error() }
func (e cancelledError) Unwrap() error        { return e.cause }
func (e cancelledError) Is(target error) bool { return target == ErrCancelled }

// ErrDisconnected is in the chain of every error caused by a session that
// was lost under a request (the process exited, the stream broke): the
// request may or may not have run.
var ErrDisconnected = proc.ErrDisconnected

// Remedy is what would make a failed operation succeed, or bring a server
// that is down back: the manager says what, as data, and each face says
// how in its reader's words (luaapi as a Lua call, cmd as a command line,
// the gateway in plain words for a model and its user). A Remedy is a
// value; the zero Remedy is none known.
type Remedy struct {
	Kind RemedyKind
	// Server is the server to act on: the one failing, or for
	// RemedyRename the one that holds the name.
	Server string
	// At is when the server tries again by itself (RemedyWait).
	At time.Time
}

// RemedyKind says which remedy a [Remedy] is.
type RemedyKind int

// The remedies.
const (
	// RemedyNone: no remedy is known.
	RemedyNone RemedyKind = iota
	// RemedyRetry: the same request may succeed later, when what it
	// waited for (a connection, a client's session) frees; when is not
	// known.
	RemedyRetry
	// RemedyWait: the server tries again by itself at At; a request after
	// that may succeed. A reconnect tries at once.
	RemedyWait
	// RemedyReconnect: the server does not try again by itself; a
	// reconnect does.
	RemedyReconnect
	// RemedyEnable: the server is disabled; enabling it connects it.
	RemedyEnable
	// RemedyLogin: the server wants a person to log in (OAuth); it is
	// connected as soon as someone does.
	RemedyLogin
	// RemedyCredentials: the server refused the credentials its
	// declaration sends; declare the ones it wants (a header), then
	// reconnect.
	RemedyCredentials
	// RemedyFixDeclaration: the server cannot start as declared (a
	// missing program or directory); fix the declaration or the machine,
	// then reconnect.
	RemedyFixDeclaration
	// RemedyRename: the name is taken by Server; declare under another
	// name, or remove Server first.
	RemedyRename
)

var remedyNames = [...]string{"none", "retry", "wait", "reconnect", "enable", "login", "credentials", "fix_declaration", "rename"}

// String is the remedy's name as events carry it ("fix_declaration").
func (k RemedyKind) String() string {
	if k >= 0 && int(k) < len(remedyNames) {
		return remedyNames[k]
	}
	return fmt.Sprintf("RemedyKind(%d)", int(k))
}

// ParseRemedyKind returns the remedy named s (as RemedyKind.String spells
// it); an unknown name is RemedyNone.
func ParseRemedyKind(s string) RemedyKind {
	for i, n := range remedyNames {
		if n == s {
			return RemedyKind(i)
		}
	}
	return RemedyNone
}

// RemedyOf returns the remedy of the first [*Error] in err's chain that
// has one.
func RemedyOf(err error) (Remedy, bool) {
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			break
		}
		if e.Remedy.Kind != RemedyNone {
			return e.Remedy, true
		}
		err = e.Err
	}
	return Remedy{}, false
}
