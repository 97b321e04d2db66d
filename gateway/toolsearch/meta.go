package toolsearch

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The names of the meta-tools a client in search mode is offered instead
// of the catalogue, before any prefix.
const (
	SearchToolName   = "search_tools"
	DescribeToolName = "describe_tools"
	CallToolName     = "call_tool"
)

// SearchArgs are search_tools' arguments.
type SearchArgs struct {
	Query  string `json:"query"`
	Limit  int    `json:"limit,omitempty"`
	Server string `json:"server,omitempty"`
}

// DescribeArgs are describe_tools' arguments.
type DescribeArgs struct {
	Names []string `json:"names"`
}

// CallArgs are call_tool's arguments.
type CallArgs struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// SearchResult is what search_tools answers.
type SearchResult struct {
	Matches []Match `json:"matches"`
}

// MetaTools are the definitions of search_tools, describe_tools and
// call_tool, each name preceded by prefix, search_tools' description
// naming servers (the servers the client can reach), so that a model
// knows what there is to look for before it searches.
func MetaTools(prefix string, servers []string) []*mcp.Tool {
	search := "Find tools by what they do. Returns the best matches: name, server, a one-line description and which words matched where. Then call describe_tools for their input schemas, and call_tool to run one."
	if len(servers) > 0 {
		search += " Servers: " + strings.Join(servers, ", ") + "."
	}
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return []*mcp.Tool{
		{
			Name:        prefix + SearchToolName,
			Description: search,
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"query":  str("What the tool should do, in a few words."),
					"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": MaxLimit, "description": "How many matches (default 10)."},
					"server": str("Only this server's tools."),
				},
				"required": []any{"query"},
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		},
		{
			Name:        prefix + DescribeToolName,
			Description: "Full definitions (description and input schema) of the named tools, as search_tools names them.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"names": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 1},
				},
				"required": []any{"names"},
			},
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		},
		{
			Name:        prefix + CallToolName,
			Description: "Call a tool by the name search_tools gave, with arguments that match its input schema.",
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":      str("The tool's name."),
					"arguments": map[string]any{"type": "object", "description": "The tool's arguments."},
				},
				"required": []any{"name"},
			},
		},
	}
}
