package toolsearch

import "fmt"

// Code classifies an [Error]; it is stable and meant for programs.
type Code string

// The codes of the errors the index returns.
const (
	// CodeInvalidEntry: an entry without a name.
	CodeInvalidEntry Code = "INVALID_ENTRY"
	// CodeDuplicate: a tool added under a name the index already holds,
	// or listed twice in one Sync.
	CodeDuplicate Code = "DUPLICATE_TOOL"
	// CodeNotFound: a tool replaced or removed that the index does not
	// hold.
	CodeNotFound Code = "TOOL_NOT_FOUND"
	// CodeEmptyQuery: a search with no words to look for and no server
	// to list.
	CodeEmptyQuery Code = "EMPTY_QUERY"
)

// Error is an error of the index, naming the operation and the tool.
// errors.Is(err, &Error{Code: c}) matches any Error with code c.
type Error struct {
	Code Code
	// Op is the operation: add, replace, remove, sync or search.
	Op string
	// Tool is the tool's name, when one is concerned.
	Tool string
}

func (e *Error) Error() string {
	switch e.Code {
	case CodeInvalidEntry:
		return fmt.Sprintf("tool search: %s: a tool needs a name", e.Op)
	case CodeDuplicate:
		return fmt.Sprintf("tool search: %s: tool %q is already indexed", e.Op, e.Tool)
	case CodeNotFound:
		return fmt.Sprintf("tool search: %s: no tool %q is indexed", e.Op, e.Tool)
	case CodeEmptyQuery:
		return fmt.Sprintf("tool search: %s: the query has no words to look for; give some, or a server to list its tools", e.Op)
	}
	return fmt.Sprintf("tool search: %s: %s %q", e.Op, e.Code, e.Tool)
}

// Is reports whether target is an *Error with e's code and no other
// field set.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Op == "" && t.Tool == "" && t.Code == e.Code
}
