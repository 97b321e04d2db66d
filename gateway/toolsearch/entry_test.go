package toolsearch_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
)

const nestedSchema = `{
	"type": "object",
	"properties": {
		"repo": {"type": "string", "description": "Repository name"},
		"filter": {"type": "object", "properties": {
			"state": {"type": "string", "description": "open or closed"}
		}},
		"labels": {"type": "array", "items": {"type": "object", "properties": {
			"name": {"type": "string", "description": "Label name"}
		}}}
	}
}`

func TestParamsAreReadFromTheSchemaHoweverItIsHeld(t *testing.T) {
	want := []toolsearch.Param{
		{Name: "filter"},
		{Name: "filter.state", Description: "open or closed"},
		{Name: "labels"},
		{Name: "labels.name", Description: "Label name"},
		{Name: "repo", Description: "Repository name"},
	}
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(nestedSchema), &m))
	assert.Equal(t, want, toolsearch.ParamsOf(m))
	assert.Equal(t, want, toolsearch.ParamsOf(json.RawMessage(nestedSchema)))
	assert.Equal(t, want, toolsearch.ParamsOf([]byte(nestedSchema)))

	for _, bad := range []any{nil, "not a schema", json.RawMessage(`[1,2]`), map[string]any{"properties": "x"}, make(chan int)} {
		assert.Empty(t, toolsearch.ParamsOf(bad), "%v", bad)
	}
}

// A server's schema is untrusted: however many properties it has, and
// however deep, a bounded number is read.
func TestHugeSchemasAreReadWithinBounds(t *testing.T) {
	props := map[string]any{}
	for i := range 1000 {
		props[fmt.Sprintf("p%04d", i)] = map[string]any{"type": "string"}
	}
	assert.Len(t, toolsearch.ParamsOf(map[string]any{"properties": props}), 64)

	deep := map[string]any{"type": "string"}
	for range 10000 {
		deep = map[string]any{"properties": map[string]any{"x": deep}}
	}
	assert.Len(t, toolsearch.ParamsOf(deep), 4)
}

func TestEntryOfTakesWhatSearchUses(t *testing.T) {
	tool := &mcp.Tool{
		Name:        "create_issue",
		Description: "Create a new issue. Fields are validated by the server.",
		Annotations: &mcp.ToolAnnotations{Title: "New issue"},
		InputSchema: json.RawMessage(nestedSchema),
	}
	e := toolsearch.EntryOf("github", "github__create_issue", tool, []string{"ticket"})
	assert.Equal(t, "github__create_issue", e.Name)
	assert.Equal(t, "github", e.Server)
	assert.Equal(t, "New issue", e.Title, "the annotations' title when the tool has none")
	assert.Equal(t, []string{"ticket"}, e.Tags)
	assert.Len(t, e.Params, 5)

	x := toolsearch.New()
	require.NoError(t, x.Add(e))
	ms, err := x.Search("ticket", toolsearch.Options{})
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "Create a new issue.", ms[0].Description, "the first sentence")
}

func TestOneLineDescription(t *testing.T) {
	long := strings.Repeat("word ", 60)
	tests := []struct{ in, want string }{
		{"Read a file.\nMore lines follow.", "Read a file."},
		{"  Search the web. Results are paginated.", "Search the web."},
		{"Accepts e.g. paths. Then more.", "Accepts e.g. paths."},
		{long, strings.TrimSpace(long[:160]) + "…"},
		{strings.Repeat("x", 300), strings.Repeat("x", 160) + "…"},
		{"", ""},
	}
	for _, tt := range tests {
		x := toolsearch.New()
		require.NoError(t, x.Add(toolsearch.Entry{Name: "s__t", Server: "s", Description: tt.in}))
		ms, err := x.Search("", toolsearch.Options{Server: "s"})
		require.NoError(t, err)
		require.Len(t, ms, 1)
		assert.Equal(t, tt.want, ms[0].Description, "%q", tt.in)
	}
}
