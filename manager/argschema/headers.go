package argschema

import (
	"bytes"
	"encoding/json"
)

// BindsHeaders reports whether schema, a tool's input schema, may bind an
// argument to a request header (an x-mcp-header member anywhere in it).
// It errs towards yes: what it cannot read it takes to bind one.
func BindsHeaders(schema any) bool {
	switch s := schema.(type) {
	case nil:
		return false
	case map[string]any:
		for k, v := range s {
			if k == "x-mcp-header" || BindsHeaders(v) {
				return true
			}
		}
		return false
	case []any:
		for _, v := range s {
			if BindsHeaders(v) {
				return true
			}
		}
		return false
	case string, bool, float64, json.Number:
		return false
	case json.RawMessage:
		return bytes.Contains(s, []byte("x-mcp-header"))
	}
	b, err := json.Marshal(schema)
	return err != nil || bytes.Contains(b, []byte("x-mcp-header"))
}
