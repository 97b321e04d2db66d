package argschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpvisor/mcpvisor/internal/suggest"
)

// Schema is a tool's input schema, compiled once per discovery so that a
// call only validates.
type Schema struct {
	schema *jsonschema.Schema
	root   *jsonschema.Resolved
	// parts holds the schemas of properties and items, at any depth, each
	// resolved on its own, to report violations per JSON path. A part that
	// cannot stand alone (a $ref into the root) is absent; the root check
	// still covers it.
	parts map[*jsonschema.Schema]*jsonschema.Resolved
	// flat, for the common schema of an object with primitive properties,
	// checks valid arguments without allocating; nil for other schemas.
	flat *flatSchema
}

// maxSchemaDepth bounds how deep parts are resolved for per-path reports.
const maxSchemaDepth = 32

// Compile compiles a tool's inputSchema as the SDK delivered it. A schema
// that is not Safe is refused with an *UnsafeError.
func Compile(raw any) (*Schema, error) {
	if raw == nil {
		return nil, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	if err := safeJSON(b); err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	root, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	a := &Schema{schema: &s, root: root, parts: make(map[*jsonschema.Schema]*jsonschema.Resolved)}
	a.resolveParts(&s, 0)
	a.flat = flatten(&s)
	return a, nil
}

// resolveParts resolves the property and item schemas under s.
func (a *Schema) resolveParts(s *jsonschema.Schema, depth int) {
	if depth >= maxSchemaDepth {
		return
	}
	parts := append(slices.Collect(maps.Values(s.Properties)), s.Items)
	for _, ps := range append(parts, s.PrefixItems...) {
		if ps == nil {
			continue
		}
		if _, seen := a.parts[ps]; seen {
			continue
		}
		// A part is resolved on its own, as the root of its own document:
		// a "$ref": "#" in it, which meant the whole schema, would now mean
		// the part itself, a loop; such a part is left to the root check.
		if Safe(ps) == nil {
			if r, err := ps.Resolve(nil); err == nil {
				a.parts[ps] = r
			}
		}
		a.resolveParts(ps, depth+1)
	}
}

// Check validates a call's arguments against the schema before any RPC,
// returning them coerced toward the schema, or an error listing every
// violation with its JSON path. A nil Schema (a tool without one) accepts
// any object. Arguments given as JSON text (a json.RawMessage, what a
// gateway client sent) are decoded once, for the validator, and come back
// as they were, byte for byte, unless coercing reshaped them (see
// checkJSON).
func (s *Schema) Check(args any) (any, error) {
	if raw, ok := args.(json.RawMessage); ok {
		return s.checkJSON(raw)
	}
	if args == nil {
		args = map[string]any{}
	}
	m, ok := args.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", Describe(args))
	}
	if s == nil {
		return m, nil
	}
	coerced, _, violations := s.check(m, true)
	if len(violations) > 0 {
		return nil, fmt.Errorf("invalid arguments: %s", strings.Join(violations, "; "))
	}
	return coerced, nil
}

// check coerces args toward the schema (an empty Lua table where an array is
// expected and, if numbers, an integral float where an integer is) and
// validates them. It returns every violation found, each prefixed by its
// JSON path, and whether coercing changed anything.
func (a *Schema) check(args map[string]any, numbers bool) (map[string]any, bool, []string) {
	c, changed := coerced(args, a.schema, numbers)
	coerced, _ := c.(map[string]any)
	if a.flat != nil && a.flat.valid(coerced) {
		return coerced, changed, nil
	}
	err := a.root.Validate(coerced)
	if err == nil {
		if hasBigInteger(a.schema, coerced) {
			return coerced, changed, bigIntegers("$", a.schema, coerced, nil)
		}
		return coerced, changed, nil
	}
	out := a.violations("$", a.schema, coerced, nil)
	if len(out) == 0 {
		out = append(out, "$: "+lastClause(err.Error()))
	}
	return coerced, changed, out
}

// violations appends what is wrong with v, found at path, against s. It
// descends into an object's properties and an array's items first, so that
// each violation is reported at its deepest path; only when those are fine
// is v validated as a whole against s (resolved on its own).
func (a *Schema) violations(path string, s *jsonschema.Schema, v any, out []string) []string {
	found := len(out)
	switch x := v.(type) {
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := x[name]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: required property is missing", path, name))
			}
		}
		if closed(s.AdditionalProperties) && len(s.PatternProperties) == 0 {
			known := slices.Sorted(maps.Keys(s.Properties))
			for _, name := range slices.Sorted(maps.Keys(x)) {
				if _, ok := s.Properties[name]; ok {
					continue
				}
				msg := fmt.Sprintf("%s.%s: unexpected property (the tool accepts: %s)", path, name, strings.Join(known, ", "))
				if c := suggest.Closest(name, known); c != "" {
					msg = fmt.Sprintf("%s.%s: unexpected property; did you mean %q?", path, name, c)
				}
				out = append(out, msg)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(x)) {
			if ps := s.Properties[name]; ps != nil {
				out = a.violations(path+"."+name, ps, x[name], out)
			}
		}
	case []any:
		for i, e := range x {
			item := s.Items
			if i < len(s.PrefixItems) {
				item = s.PrefixItems[i]
			}
			if item != nil {
				out = a.violations(fmt.Sprintf("%s[%d]", path, i), item, e, out)
			}
		}
	}
	if len(out) == found {
		if p := typeProblem(s, v); p != "" {
			out = append(out, path+": "+p)
		} else if p := rangeProblem(s, v); p != "" {
			out = append(out, path+": "+p)
		} else if r := a.parts[s]; r != nil {
			if err := r.Validate(v); err != nil {
				out = append(out, path+": "+lastClause(err.Error()))
			}
		}
	}
	return out
}

// closed reports whether an additionalProperties schema forbids extras
// (`false` decodes as a schema with Not set to the empty schema).
func closed(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && isEmptySchema(s.Not)
}

func isEmptySchema(s *jsonschema.Schema) bool {
	b, err := json.Marshal(s)
	return err == nil && (string(b) == "true" || string(b) == "{}")
}

// lastClause drops jsonschema-go's "validating /properties/x: " prefixes,
// which our JSON path replaces, and rephrases its type errors.
func lastClause(msg string) string {
	for strings.HasPrefix(msg, "validating ") {
		j := strings.Index(msg, ": ")
		if j < 0 {
			break
		}
		msg = msg[j+2:]
	}
	if m := typeMismatch.FindStringSubmatch(msg); m != nil {
		// The validator prints the value as Go does (null as
		// "<invalid reflect.Value>", an object as "map[…]"): only a
		// string, number or boolean is quoted, as JSON would.
		switch m[2] {
		case "string":
			return fmt.Sprintf("must be %s, got string %s", m[3], strconv.Quote(m[1]))
		case "integer", "number", "boolean":
			return fmt.Sprintf("must be %s, got %s %s", m[3], m[2], m[1])
		case "null":
			return fmt.Sprintf("must be %s, got null", m[3])
		}
		return fmt.Sprintf("must be %s, got %s", m[3], article(m[2]))
	}
	return msg
}

// article is a JSON type's name with its article: "an object".
func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// typeMismatch is jsonschema-go's `type: 1.5 has type "number", want "integer"`.
var typeMismatch = regexp.MustCompile(`^type: (.*) has type "(\w+)", want "(\w+)"$`)

// coerce adjusts Lua-shaped values to the schema: Lua cannot tell an empty
// array from an empty object, nor an integer from an integral float. It
// copies only what it changes.
func coerce(v any, s *jsonschema.Schema) any {
	out, _ := coerced(v, s, true)
	return out
}

// coerced is coerce reporting whether anything changed; integral floats
// become integers only if numbers (JSON text needs no such change: its
// 5 and 5.0 are one integer to the validator and to the server).
func coerced(v any, s *jsonschema.Schema, numbers bool) (any, bool) {
	if s == nil {
		return v, false
	}
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 && wants(s, "array") && !wants(s, "object") {
			return []any{}, true
		}
		var out map[string]any
		for k, e := range x {
			c, changed := coerced(e, s.Properties[k], numbers)
			if !changed {
				continue
			}
			if out == nil {
				out = maps.Clone(x)
			}
			out[k] = c
		}
		if out == nil {
			return x, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			item := s.Items
			if i < len(s.PrefixItems) {
				item = s.PrefixItems[i]
			}
			c, changed := coerced(e, item, numbers)
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(x)
			}
			out[i] = c
		}
		if out == nil {
			return x, false
		}
		return out, true
	case float64:
		if numbers && wants(s, "integer") && x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	}
	return v, false
}

func wants(s *jsonschema.Schema, typ string) bool {
	return s.Type == typ || slices.Contains(s.Types, typ)
}
