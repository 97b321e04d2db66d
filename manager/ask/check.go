package ask

import (
	"fmt"
	"strings"

	"github.com/mcpvisor/mcpvisor/manager/argschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CheckForm reports why a form elicitation's requested schema cannot be
// used, or nil: it comes from the server, and a schema that refers to
// itself without consuming data would send any validator (the go-sdk's,
// in whichever client or server session checks the answer) into a fatal
// stack overflow. Nobody is asked such a form.
func CheckForm(p *mcp.ElicitParams) error {
	if Mode(p) != "form" || p.RequestedSchema == nil {
		return nil
	}
	if err := argschema.Safe(p.RequestedSchema); err != nil {
		return fmt.Errorf("the requested form cannot be used: %w", err)
	}
	return nil
}

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
