package ask

import (
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WithDefaults returns res with the requested form's defaults filled in
// for the fields an accepted answer leaves out: a person who submits a
// form unchanged accepts what it showed, and the server gets what it
// offered, as a client that fills forms in does. Fields the answer gives
// are kept as given, and the check that follows ([CheckElicitation])
// judges the whole. Anything else (a URL, a refusal, a form without
// defaults, a schema that is not an object) is returned as is; res is
// never modified.
func WithDefaults(p *mcp.ElicitParams, res *mcp.ElicitResult) *mcp.ElicitResult {
	if res == nil || res.Action != "accept" || Mode(p) != "form" || p.RequestedSchema == nil {
		return res
	}
	defaults := formDefaults(p.RequestedSchema)
	if len(defaults) == 0 {
		return res
	}
	content := maps.Clone(res.Content)
	if content == nil {
		content = map[string]any{}
	}
	filled := false
	for name, v := range defaults {
		if _, given := content[name]; !given {
			content[name] = v
			filled = true
		}
	}
	if !filled {
		return res
	}
	out := *res
	out.Content = content
	return &out
}

// formDefaults returns the default of each top-level property of a form's
// schema that has one, decoded as JSON decodes (numbers as float64, as
// the schema check and the wire expect).
func formDefaults(schema any) map[string]any {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	out := map[string]any{}
	for name, prop := range s.Properties {
		if len(prop.Default) == 0 || string(prop.Default) == "null" {
			continue
		}
		var v any
		if json.Unmarshal(prop.Default, &v) == nil {
			out[name] = v
		}
	}
	return out
}
