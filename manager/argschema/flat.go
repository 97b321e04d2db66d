package argschema

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// flatSchema is the shape most tools declare: an object whose properties
// are strings, integers, numbers or booleans, some required, extras maybe
// forbidden. Checking valid arguments against it needs no allocation, where
// the general validator allocates ~26 times per call. It only says yes or
// no: a "no" goes to the general validator for the messages.
type flatSchema struct {
	props    map[string]string // property → JSON type
	required []string
	closed   bool
}

// rootKeys and propKeys are the keywords a flat schema may use; anything
// else (enum, pattern, minimum, …) needs the general validator.
var (
	rootKeys = []string{"type", "properties", "required", "additionalProperties", "$schema", "title", "description"}
	propKeys = []string{"type", "title", "description"}
	flatType = []string{"string", "integer", "number", "boolean"}
)

// flatten returns the flat form of s, or nil when s is not flat.
func flatten(s *jsonschema.Schema) *flatSchema {
	if s.Type != "object" || !onlyKeys(s, rootKeys) {
		return nil
	}
	f := &flatSchema{props: make(map[string]string, len(s.Properties)), required: s.Required}
	if s.AdditionalProperties != nil {
		if !closed(s.AdditionalProperties) {
			return nil
		}
		f.closed = true
	}
	for name, p := range s.Properties {
		if p == nil || !slices.Contains(flatType, p.Type) || !onlyKeys(p, propKeys) {
			return nil
		}
		f.props[name] = p.Type
	}
	return f
}

// onlyKeys reports whether s uses no keyword outside allowed.
func onlyKeys(s *jsonschema.Schema, allowed []string) bool {
	b, err := json.Marshal(s)
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			return false
		}
	}
	return true
}

// valid reports whether args satisfy f.
func (f *flatSchema) valid(args map[string]any) bool {
	for _, name := range f.required {
		if _, ok := args[name]; !ok {
			return false
		}
	}
	for k, v := range args {
		typ, ok := f.props[k]
		if !ok {
			if f.closed {
				return false
			}
			continue
		}
		if !hasType(v, typ) {
			return false
		}
	}
	return true
}

func hasType(v any, typ string) bool {
	switch x := v.(type) {
	case string:
		return typ == "string"
	case bool:
		return typ == "boolean"
	case int, int64, int32, uint64:
		return typ == "integer" || typ == "number"
	case float64:
		return typ == "number" || (typ == "integer" && x == math.Trunc(x) && math.Abs(x) <= maxSafeInteger)
	}
	return false // anything else (json.Number, …) is the general validator's call
}
