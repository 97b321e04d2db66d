package argschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// maxShown bounds how much of a value a message quotes.
const maxShown = 60

// maxSafeInteger is the largest integer a JSON number (an IEEE double,
// as most servers read it) holds exactly: a larger one arrives as
// another number, or not at all.
const maxSafeInteger = 1<<53 - 1

// Describe says what a value received as JSON is, and what it holds, in
// JSON's words: `null`, `boolean true`, `integer 42`, `number 2.5`,
// `string "two"`, `object {"a":1}`, `array [1,2]`. The value is written
// as JSON (so escaped: a control character cannot reach a terminal, nor
// a quote end the text), cut to about 60 bytes with "…".
func Describe(v any) string {
	kind := kindOf(v)
	if kind == "null" {
		return "null"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return kind
	}
	shown := strings.TrimSuffix(b.String(), "\n")
	if len(shown) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(shown[cut]) {
			cut--
		}
		shown = shown[:cut] + "…"
	}
	if kind == "" {
		return shown
	}
	return kind + " " + shown
}

// kindOf is the JSON type of v as a schema names it: "integer" for a
// number with no fraction that a JSON number holds exactly, "number" for
// any other; "" for a Go value JSON has no type for.
func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	case float32:
		return kindOf(float64(x))
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= maxSafeInteger {
			return "integer"
		}
		return "number"
	case json.Number:
		if i, err := x.Int64(); err == nil && i >= -maxSafeInteger && i <= maxSafeInteger {
			return "integer"
		}
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return ""
}

// typeProblem says how v is not of the type s declares, or "" if it is
// (or s declares none, or v's type is not JSON's to tell). An integral
// number beyond maxSafeInteger is no integer: it could not reach the
// server as the integer it looks like.
func typeProblem(s *jsonschema.Schema, v any) string {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	kind := kindOf(v)
	if len(types) == 0 || kind == "" {
		return ""
	}
	if slices.Contains(types, kind) || kind == "integer" && slices.Contains(types, "number") {
		return ""
	}
	msg := fmt.Sprintf("must be %s, got %s", strings.Join(types, " or "), Describe(v))
	if kind == "number" && slices.Contains(types, "integer") && integral(v) {
		msg += fmt.Sprintf(" (beyond ±%d, the integers a JSON number holds exactly)", maxSafeInteger)
	}
	return msg
}

// rangeProblem says how the number v is outside the range s declares
// (minimum, maximum, exclusive or not), or "" if it is within it or is no
// number.
func rangeProblem(s *jsonschema.Schema, v any) string {
	var x float64
	switch n := v.(type) {
	case float64:
		x = n
	case int64:
		x = float64(n)
	case int:
		x = float64(n)
	case json.Number:
		f, err := n.Float64()
		if err != nil {
			return ""
		}
		x = f
	default:
		return ""
	}
	bound := func(b float64) string { return fmt.Sprint(b) }
	switch {
	case s.Minimum != nil && x < *s.Minimum:
		return fmt.Sprintf("must be at least %s, got %s", bound(*s.Minimum), Describe(v))
	case s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum:
		return fmt.Sprintf("must be more than %s, got %s", bound(*s.ExclusiveMinimum), Describe(v))
	case s.Maximum != nil && x > *s.Maximum:
		return fmt.Sprintf("must be at most %s, got %s", bound(*s.Maximum), Describe(v))
	case s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum:
		return fmt.Sprintf("must be less than %s, got %s", bound(*s.ExclusiveMaximum), Describe(v))
	}
	return ""
}

// integral reports whether v is a number with no fraction.
func integral(v any) bool {
	switch x := v.(type) {
	case float64:
		return x == math.Trunc(x) && !math.IsInf(x, 0)
	case json.Number:
		f, err := x.Float64()
		return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
	}
	return false
}

// hasBigInteger reports whether v holds, where s wants an integer, a
// number beyond maxSafeInteger. The schema validator takes such a number
// for an integer; the server would not get it as one. It allocates
// nothing: it runs on every valid call of a schema that is not flat.
func hasBigInteger(s *jsonschema.Schema, v any) bool {
	if s == nil {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for name, e := range x {
			if hasBigInteger(s.Properties[name], e) {
				return true
			}
		}
	case []any:
		for i, e := range x {
			item := s.Items
			if i < len(s.PrefixItems) {
				item = s.PrefixItems[i]
			}
			if hasBigInteger(item, e) {
				return true
			}
		}
	case float64:
		return wants(s, "integer") && !wants(s, "number") && x == math.Trunc(x) && math.Abs(x) > maxSafeInteger
	}
	return false
}

// bigIntegers appends, for every number at or under path that s wants an
// integer and that is beyond maxSafeInteger, what is wrong with it (see
// hasBigInteger).
func bigIntegers(path string, s *jsonschema.Schema, v any, out []string) []string {
	if s == nil {
		return out
	}
	switch x := v.(type) {
	case map[string]any:
		for name, e := range x {
			if ps := s.Properties[name]; ps != nil {
				out = bigIntegers(path+"."+name, ps, e, out)
			}
		}
	case []any:
		for i, e := range x {
			item := s.Items
			if i < len(s.PrefixItems) {
				item = s.PrefixItems[i]
			}
			out = bigIntegers(fmt.Sprintf("%s[%d]", path, i), item, e, out)
		}
	case float64, json.Number:
		if p := typeProblem(s, v); p != "" {
			out = append(out, path+": "+p)
		}
	}
	return out
}
