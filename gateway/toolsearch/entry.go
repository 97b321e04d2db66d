package toolsearch

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Entry is what the index knows of one tool.
type Entry struct {
	// Name is the tool's name as the endpoint exposes it (server__tool on
	// /mcp); it is the entry's key and what call_tool takes.
	Name string
	// Server is the name of the server that offers the tool.
	Server string
	// Title is the tool's display name, if it has one.
	Title string
	// Description is the tool's description (or the user's override).
	Description string
	// Params are the parameters of its input schema.
	Params []Param
	// Tags are the user's own words for the tool: tags and aliases.
	Tags []string
}

// Param is one parameter of a tool's input schema. A nested object's
// properties are parameters too, named by their path (filter.state).
type Param struct {
	Name        string
	Description string
}

// Bounds on what is read of a server's input schema.
const (
	maxParams      = 64
	maxSchemaDepth = 4
)

// EntryOf is the entry of a server's tool t, exposed as name, with the
// user's tags. The schema is read as far as it makes sense: a schema that
// is not an object gives no parameters rather than an error.
func EntryOf(server, name string, t *mcp.Tool, tags []string) Entry {
	e := Entry{Name: name, Server: server, Tags: slices.Clone(tags)}
	if t == nil {
		return e
	}
	e.Title = t.Title
	if e.Title == "" && t.Annotations != nil {
		e.Title = t.Annotations.Title
	}
	e.Description = t.Description
	e.Params = ParamsOf(t.InputSchema)
	return e
}

// ParamsOf is the parameters of a JSON schema given as the SDK holds one
// (a map, json.RawMessage, []byte or any value that encodes as JSON), in
// name order, nested properties after their parent, at most 64 of them.
func ParamsOf(schema any) []Param {
	var m map[string]any
	switch v := schema.(type) {
	case nil:
		return nil
	case map[string]any:
		m = v
	case json.RawMessage:
		_ = json.Unmarshal(v, &m)
	case []byte:
		_ = json.Unmarshal(v, &m)
	default:
		if b, err := json.Marshal(v); err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	var out []Param
	collectParams(&out, m, "", 0)
	return out
}

func collectParams(out *[]Param, schema map[string]any, prefix string, depth int) {
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if len(*out) >= maxParams {
			return
		}
		p, _ := props[n].(map[string]any)
		desc, _ := p["description"].(string)
		*out = append(*out, Param{Name: prefix + n, Description: desc})
		if depth+1 >= maxSchemaDepth || p == nil {
			continue
		}
		if items, ok := p["items"].(map[string]any); ok {
			p = items
		}
		collectParams(out, p, prefix+n+".", depth+1)
	}
}

// maxLineRunes bounds a match's one-line description.
const maxLineRunes = 160

// oneLine is the first sentence or line of a description, cut at a word
// within maxLineRunes.
func oneLine(desc string) string {
	desc = strings.TrimSpace(desc)
	if i := strings.IndexAny(desc, "\r\n"); i >= 0 {
		desc = strings.TrimSpace(desc[:i])
	}
	if i := sentenceEnd(desc); i > 0 {
		desc = desc[:i]
	}
	runes, lastSpace := 0, -1
	for i, r := range desc {
		if runes == maxLineRunes {
			cut := i
			if lastSpace > 0 {
				cut = lastSpace
			}
			return strings.TrimRightFunc(desc[:cut], unicode.IsSpace) + "…"
		}
		if unicode.IsSpace(r) {
			lastSpace = i
		}
		runes++
	}
	return desc
}

// sentenceEnd is the offset just past the first ". " of s, or 0.
func sentenceEnd(s string) int {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '.' && s[i+1] == ' ' && i >= 2 && unicode.IsLower(rune(s[i-1])) && s[i-2] != '.' {
			return i + 1
		}
	}
	return 0
}

func equalEntry(a, b Entry) bool {
	return a.Name == b.Name && a.Server == b.Server && a.Title == b.Title &&
		a.Description == b.Description && slices.Equal(a.Params, b.Params) &&
		slices.Equal(a.Tags, b.Tags)
}
