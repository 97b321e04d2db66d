package ask

import (
	"fmt"
	"strings"

	"github.com/mcpvisor/mcpvisor/manager/argschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CheckElicitation reports what is wrong with an answer to an elicitation
// request, or nil: an action of accept, decline or cancel, and, for an
// accepted form, content that satisfies the requested schema (each
// violation named with its field). It never modifies res.
func CheckElicitation(p *mcp.ElicitParams, res *mcp.ElicitResult) error {
	if res == nil {
		return fmt.Errorf("no answer (want {action = \"accept\" | \"decline\" | \"cancel\"})")
	}
	switch res.Action {
	case "accept":
	case "decline", "cancel":
		return nil
	default:
		return fmt.Errorf("action must be \"accept\", \"decline\" or \"cancel\", got %q", res.Action)
	}
	if p.Mode == "url" || p.RequestedSchema == nil {
		return nil
	}
	schema, err := argschema.Compile(p.RequestedSchema)
	if err != nil {
		return fmt.Errorf("the requested schema cannot be checked: %w", err)
	}
	var content any = map[string]any{}
	if res.Content != nil {
		content = res.Content
	}
	if _, err := schema.Check(content); err != nil {
		return fmt.Errorf("the answer does not fit the requested form: %s", strings.TrimPrefix(err.Error(), "invalid arguments: "))
	}
	return nil
}
