package toolsearch_test

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
)

// The meta-tools are definitions a go-sdk server accepts, renamed by the
// prefix, with search_tools naming the servers.
func TestMetaToolsAreServableDefinitions(t *testing.T) {
	tools := toolsearch.MetaTools("mv_", []string{"github", "filesystem"})
	var got []string
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	for _, tool := range tools {
		got = append(got, tool.Name)
		require.NotPanics(t, func() {
			srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
		})
	}
	assert.Equal(t, []string{"mv_search_tools", "mv_describe_tools", "mv_call_tool"}, got)
	assert.Contains(t, tools[0].Description, "Servers: github, filesystem.")
}

// Each meta-tool's schema has exactly the properties its argument type
// decodes, so that what a model sends is what the handler reads.
func TestMetaToolSchemasMatchTheirArguments(t *testing.T) {
	tools := toolsearch.MetaTools("", nil)
	args := []any{toolsearch.SearchArgs{}, toolsearch.DescribeArgs{}, toolsearch.CallArgs{}}
	for i, tool := range tools {
		props := tool.InputSchema.(map[string]any)["properties"].(map[string]any)
		var fields []string
		typ := reflect.TypeOf(args[i])
		for j := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(j).Tag.Get("json"), ",")
			fields = append(fields, name)
		}
		slices.Sort(fields)
		assert.Equal(t, slices.Sorted(maps.Keys(props)), fields, tool.Name)
	}
}
