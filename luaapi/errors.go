package luaapi

import (
	"errors"
	"io"
	"regexp"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// Error is a failure of Lua code: a syntax error, a runtime error or a
// cancelled task. It keeps the Lua message (with chunk:line) and, for runtime
// errors, the Lua traceback captured inside the task.
type Error struct {
	// Message is what Lua said, e.g. `startup.lua:3: attempt to index a nil value`.
	Message string
	// Traceback is the Lua stack at the error, if known.
	Traceback string
	// Syntax is true for compile errors.
	Syntax bool
	// Cause is the underlying Go error, such as context.Canceled.
	Cause error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Cause }

// syntaxError wraps a compile error.
func syntaxError(err error) *Error {
	msg := err.Error()
	var ae *lua.ApiError
	if errors.As(err, &ae) && ae.Cause != nil {
		msg = ae.Cause.Error()
	}
	msg = strings.TrimSpace(collapseSpaces(msg))
	// gopher-lua says "file line:4(column:11) near '='"; editors and people
	// expect "file:4:11: near '='".
	msg = syntaxPos.ReplaceAllString(msg, "$1:$2:$3:")
	msg = strings.Replace(msg, " at EOF: syntax error", ": unexpected end of input (unfinished chunk)", 1)
	msg = strings.Replace(msg, " at EOF: ", ": at end of input: ", 1)
	return &Error{Message: msg, Syntax: true, Cause: err}
}

var syntaxPos = regexp.MustCompile(`^(\S+) line:(\d+)\(column:(\d+)\)`)

// taskError wraps the error that ended a task, deciding cancellation from
// the task's context rather than from message text.
func (r *Runtime) taskError(t *task, err error) *Error {
	e := &Error{Message: err.Error(), Traceback: t.trace}
	var ae *lua.ApiError
	if errors.As(err, &ae) {
		e.Message = renderErrorValue(ae.Object)
	}
	if cerr := t.ctx.Err(); cerr != nil {
		e.Cause = cerr
		if r.base.Err() != nil {
			e.Message = "interrupted: the host is shutting down"
		} else {
			e.Message = "interrupted"
		}
	}
	return e
}

// ShownTraceback is the traceback to show a person with the message: none
// when it says nothing the message does not, that is a single frame of Lua
// code (besides builtins such as mcp_add) whose file:line the message
// already starts with. An error in a config's top level, or in a one-line
// chunk, then reads as file:line and the message; an error inside a
// function keeps the stack that says how it was reached.
func (e *Error) ShownTraceback() string {
	msg, tb := e.Message, e.Traceback
	if tb == "" {
		return ""
	}
	var lua []string
	for _, l := range strings.Split(tb, "\n")[1:] {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "[G]:") {
			lua = append(lua, l)
		}
	}
	if len(lua) == 1 {
		if at, _, ok := strings.Cut(lua[0], ": in "); ok && strings.HasPrefix(msg, at+":") {
			return ""
		}
	}
	return tb
}

// renderErrorValue turns a raised Lua value into a message: strings as they
// are, tables with __tostring through it, other tables pretty-printed (not
// "table: 0x…").
func renderErrorValue(v lua.LValue) string {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case *lua.LTable:
		if mt, ok := x.Metatable.(*lua.LTable); ok {
			if ts, ok := mt.RawGetString("__tostring").(*lua.LFunction); ok && ts.GFunction != nil {
				// Our own error tables: tostring is implemented in Go and safe.
				return errTableString(x)
			}
		}
		return "error object: " + Pretty(x)
	case nil:
		return "nil"
	}
	return v.String()
}

// parseChunk compiles src only to see whether it parses.
func parseChunk(src string) ([]ast.Stmt, error) {
	return parse.Parse(strings.NewReader(src), "=stdin")
}

// errAtEOF reports a parse error at end of input: the chunk is incomplete.
func errAtEOF(err error) bool {
	return strings.Contains(err.Error(), "at EOF")
}

func stringReader(s string) io.Reader { return strings.NewReader(s) }

func collapseSpaces(s string) string { return strings.Join(strings.Fields(s), " ") }
