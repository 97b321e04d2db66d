package argschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// errNotJSON is arguments given as JSON text that is not JSON.
var errNotJSON = errors.New("arguments are not valid JSON")

// checkJSON is Check of arguments given as JSON text. It decodes them
// once, into the plain values the validator takes, and never encodes them
// again: valid arguments come back as the very json.RawMessage given, so
// what the server receives is what the client sent (key order, number
// spelling and all). Only when coercing reshaped them (an empty object
// where the schema wants an array) do the coerced values come back
// instead, to be encoded as before. Empty text and null are no arguments.
// A nil Schema checks only that the text is an object, without decoding
// it.
func (s *Schema) checkJSON(raw json.RawMessage) (any, error) {
	text := bytes.TrimSpace(raw)
	if len(text) == 0 || string(text) == "null" {
		return s.Check(nil)
	}
	if s == nil && text[0] == '{' {
		if !json.Valid(text) {
			return nil, errNotJSON
		}
		return raw, nil
	}
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		return nil, errNotJSON
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object, got %s", Describe(v))
	}
	if s == nil {
		return raw, nil
	}
	coerced, reshaped, violations := s.check(m, false)
	if len(violations) > 0 {
		return nil, fmt.Errorf("invalid arguments: %s", strings.Join(violations, "; "))
	}
	if reshaped {
		return coerced, nil
	}
	return raw, nil
}
