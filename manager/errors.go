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
type Error struct {
	Code   Code
	Server string // "" for host-wide errors
	Op     string // e.g. `connect`, `tools/call "echo"`
	Err    error  // the cause; its text is the message's tail
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
