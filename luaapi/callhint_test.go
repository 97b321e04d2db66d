package luaapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Calling something that is not a function names it and, when it looks
// like a typo, suggests the closest global function or library field.
func TestCallOfNonFunctionNamesIt(t *testing.T) {
	r := newTestRuntime(t, nil)
	tests := []struct {
		name, src, want string
	}{
		{"typo of a global", `mcp_ad("x", {command = {"true"}})`, "test:1: attempt to call 'mcp_ad', which is nil; did you mean mcp_add?"},
		{"typo of a library field", `return json.encdoe({})`, "test:1: attempt to call 'encdoe', which is nil; did you mean json.encode?"},
		{"not a function", "x = 5\nx()", "test:2: attempt to call 'x', which is a number"},
		{"nothing close", `zzzzzz()`, "test:1: attempt to call 'zzzzzz', which is nil"},
		{"two candidates on the line", `local a = foo1() or foo2()`, "test:1: attempt to call a non-function object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, r.fail(t, tt.src).Message)
		})
	}
}

// The traceback shown with an error is dropped when it only repeats the
// message's file:line (an error at a chunk's top level, through a builtin
// such as mcp_add too), and kept when it says how the error was reached.
func TestShownTraceback(t *testing.T) {
	r := newTestRuntime(t, nil)
	le := r.fail(t, `mcp_add("x", {url = "127.0.0.1:9/mcp"})`)
	require.Contains(t, le.Message, `test:1: INVALID_CONFIG: server "x": config: url: must be an http:// or https:// URL, got "127.0.0.1:9/mcp"; add the scheme: "http://127.0.0.1:9/mcp"`)
	require.NotEmpty(t, le.Traceback, "kept for logs")
	require.Empty(t, le.ShownTraceback())

	le = r.fail(t, "error('top')")
	require.Empty(t, le.ShownTraceback())

	le = r.fail(t, "local function f()\n  error('deep')\nend\nf()")
	require.Equal(t, le.Traceback, le.ShownTraceback())
	require.Contains(t, le.ShownTraceback(), "in function 'f'")

	le = r.fail(t, "error({code = 1})")
	require.Equal(t, le.Traceback, le.ShownTraceback(), "the only place that says where")
}
