package argschema_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/manager/argschema"
)

// A schema binds an argument to a request header when x-mcp-header
// appears anywhere in it, in whatever shape the schema came; one that
// cannot be read is taken to bind one, so that its calls keep to the
// go-sdk, which sends those headers.
func TestBindsHeaders(t *testing.T) {
	plain := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	bound := map[string]any{"type": "object", "properties": map[string]any{
		"region": map[string]any{"type": "string", "x-mcp-header": "Region"}}}
	inList := map[string]any{"anyOf": []any{plain, bound}}
	for name, tc := range map[string]struct {
		schema any
		want   bool
	}{
		"none":       {nil, false},
		"plain":      {plain, false},
		"a property": {bound, true},
		"in a list":  {inList, true},
		"raw, plain": {json.RawMessage(`{"type":"object"}`), false},
		"raw, bound": {json.RawMessage(`{"properties":{"r":{"x-mcp-header":"R"}}}`), true},
		"a struct": {struct {
			Header string `json:"x-mcp-header"`
		}{"R"}, true},
		"unreadable":   {map[string]any{"f": func() {}}, true},
		"a value name": {map[string]any{"enum": []any{"x-mcp-header-like", 1.0, true}}, false},
	} {
		assert.Equal(t, tc.want, argschema.BindsHeaders(tc.schema), name)
	}
}
