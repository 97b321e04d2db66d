package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager"
)

// toolView is a tool as the server page shows it, with the fields of
// its try form made from its input schema.
type toolView struct {
	manager.ToolInfo
	Schema string // indented JSON
	Tokens int    // what its definition costs a model when listed
	Fields []field
}

// field is one input of a try form: one property of the schema.
type field struct {
	Name        string
	Type        string // the schema's type
	Input       string // text, number, checkbox, select or json
	Step        string // of a number: "1" for integers, "any" otherwise
	Required    bool
	Description string
	Options     []string // of a select
}

// schema is the part of a JSON schema the form generator reads.
type schema struct {
	Type       any                `json:"type"`
	Properties map[string]*schema `json:"properties"`
	Required   []string           `json:"required"`
	Enum       []any              `json:"enum"`
	Desc       string             `json:"description"`
}

// typeName is the schema's type: its first one other than null when
// it lists several.
func (s *schema) typeName() string {
	switch t := s.Type.(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if n, ok := x.(string); ok && n != "null" {
				return n
			}
		}
	}
	return ""
}

// parseSchema reads a tool's input schema as the manager holds it (a
// map, a *jsonschema.Schema or raw JSON).
func parseSchema(in any) (*schema, string) {
	raw, err := json.Marshal(in)
	if err != nil {
		return &schema{}, ""
	}
	var s schema
	_ = json.Unmarshal(raw, &s)
	var pretty strings.Builder
	enc := json.NewEncoder(&pretty)
	enc.SetIndent("", "  ")
	var v any
	if json.Unmarshal(raw, &v) == nil && enc.Encode(v) == nil {
		return &s, strings.TrimSpace(pretty.String())
	}
	return &s, string(raw)
}

func (c *Console) newToolView(t manager.ToolInfo) toolView {
	s, pretty := parseSchema(t.InputSchema)
	v := toolView{ToolInfo: t, Schema: pretty}
	if t.Tool != nil {
		v.Tokens = c.costs.Tool(t.Tool)
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			p = &schema{}
		}
		f := field{Name: n, Type: p.typeName(), Required: slices.Contains(s.Required, n), Description: p.Desc}
		switch {
		case len(p.Enum) > 0 && allStrings(p.Enum):
			f.Input = "select"
			for _, e := range p.Enum {
				f.Options = append(f.Options, e.(string))
			}
		case f.Type == "integer":
			f.Input, f.Step = "number", "1"
		case f.Type == "number":
			f.Input, f.Step = "number", "any"
		case f.Type == "boolean":
			f.Input = "checkbox"
		case f.Type == "string":
			f.Input = "text"
		default:
			f.Input = "json"
		}
		v.Fields = append(v.Fields, f)
	}
	return v
}

func allStrings(xs []any) bool {
	for _, x := range xs {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

// argsOf reads a try form's arguments as the tool's schema types them:
// numbers as numbers, booleans as booleans, JSON fields as JSON. An
// empty field is left out, so that the call's own validation says what
// is missing.
func argsOf(r *http.Request, t toolView) (map[string]any, error) {
	args := map[string]any{}
	for _, f := range t.Fields {
		if f.Input == "checkbox" {
			args[f.Name] = r.PostFormValue("arg."+f.Name) == "true"
			continue
		}
		key := "arg." + f.Name
		if f.Input == "json" {
			key = "json." + f.Name
		}
		val := strings.TrimSpace(r.PostFormValue(key))
		if val == "" {
			continue
		}
		switch f.Input {
		case "number":
			if f.Type == "integer" {
				n, err := strconv.ParseInt(val, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("argument %q: %q is not an integer", f.Name, val)
				}
				args[f.Name] = n
				continue
			}
			n, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return nil, fmt.Errorf("argument %q: %q is not a number", f.Name, val)
			}
			args[f.Name] = n
		case "json":
			var v any
			if err := json.Unmarshal([]byte(val), &v); err != nil {
				return nil, fmt.Errorf("argument %q: not JSON: %v", f.Name, err)
			}
			args[f.Name] = v
		default:
			args[f.Name] = val
		}
	}
	return args, nil
}

// callResult is what trying a tool gave.
type callResult struct {
	Tool    string
	Text    string
	IsError bool
	Took    string
	Err     string
}

// try calls a tool with the arguments of its form, as a client's call
// is made (the manager validates them against the schema), and shows
// the server page with the result.
func (c *Console) try(w http.ResponseWriter, r *http.Request, s session) {
	server, tool := r.PathValue("name"), r.PathValue("tool")
	tools, err := c.opts.Backend.Tools(server)
	if err != nil {
		http.Error(w, fmt.Sprintf("no server %q: %v", server, err), http.StatusNotFound)
		return
	}
	i := slices.IndexFunc(tools, func(t manager.ToolInfo) bool { return t.Name == tool })
	if i < 0 {
		http.Error(w, fmt.Sprintf("server %q has no tool %q", server, tool), http.StatusNotFound)
		return
	}
	tv := c.newToolView(tools[i])
	res := &callResult{Tool: tv.FullName}
	status := http.StatusOK
	args, err := argsOf(r, tv)
	if err != nil {
		res.Err = fmt.Sprintf("call %s: %v", tv.FullName, err)
		status = http.StatusBadRequest
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), c.opts.CallTimeout)
		start := c.opts.Now()
		out, err := c.opts.Backend.Call(ctx, tv.FullName, args, manager.CallOptions{FailFast: true})
		cancel()
		res.Took = roundDuration(c.opts.Now().Sub(start))
		if err != nil {
			res.Err = err.Error()
			status = http.StatusBadGateway
		} else {
			res.Text, res.IsError = resultText(out), out.IsError
		}
	}
	c.showServer(w, r, s, status, res)
}

// resultText is a call result's text contents, one per line, or its
// structured content as JSON when it has no text.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, ct := range res.Content {
		switch ct := ct.(type) {
		case *mcp.TextContent:
			parts = append(parts, ct.Text)
		default:
			raw, _ := json.Marshal(ct)
			parts = append(parts, string(raw))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		raw, _ := json.MarshalIndent(res.StructuredContent, "", "  ")
		parts = append(parts, string(raw))
	}
	return strings.Join(parts, "\n")
}
