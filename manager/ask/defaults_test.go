package ask_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// Defaults fill only what an accepted form's answer leaves out; the
// answer given is never modified, and anything but an accepted form is
// passed as is.
func TestWithDefaults(t *testing.T) {
	form := &mcp.ElicitParams{RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
		"a": map[string]any{"type": "string", "default": "x"},
		"b": map[string]any{"type": "integer", "default": 2},
		"c": map[string]any{"type": "string"},
	}}}
	given := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"a": "mine"}}
	got := ask.WithDefaults(form, given)
	require.Equal(t, map[string]any{"a": "mine", "b": 2.0}, got.Content)
	require.Equal(t, map[string]any{"a": "mine"}, given.Content, "the answer given is not modified")

	require.Equal(t, map[string]any{"a": "x", "b": 2.0}, ask.WithDefaults(form, &mcp.ElicitResult{Action: "accept"}).Content)
	decline := &mcp.ElicitResult{Action: "decline"}
	require.Same(t, decline, ask.WithDefaults(form, decline))
	url := &mcp.ElicitParams{Mode: "url", URL: "https://example.com"}
	accepted := &mcp.ElicitResult{Action: "accept"}
	require.Same(t, accepted, ask.WithDefaults(url, accepted))
	require.Nil(t, ask.WithDefaults(form, nil))
	odd := &mcp.ElicitParams{RequestedSchema: []any{1, 2}}
	require.Same(t, accepted, ask.WithDefaults(odd, accepted), "a schema that is not an object has no defaults")
}
