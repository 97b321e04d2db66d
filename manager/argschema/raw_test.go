package argschema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Arguments sent as JSON text are validated as they are and come back
// untouched: the very bytes, whatever their key order or number spelling,
// never decoded to a map and encoded again.
func TestCheckJSONKeepsTheBytes(t *testing.T) {
	s := mustCompile(t, searchSchema)
	for _, raw := range []string{
		`{"query":"go","limit":5}`,
		`{"limit":5.0,"query":"go"}`,          // keys out of order, an integer spelled as a float
		`{"query":"\u0067o <&>","limit":1e1}`, // escapes and an exponent
		`{"query":"x","options":{"mode":"fast","depth":2},"tags":["b","a"]}`,
		` {"query":"x"} `, // surrounding space
		`{"query":"x","matrix":[[1,2],[3]],"meta":{"z":1,"a":[true,null]}}`,
	} {
		got, err := s.Check(json.RawMessage(raw))
		require.NoError(t, err, raw)
		require.IsType(t, json.RawMessage{}, got, raw)
		require.Equal(t, raw, string(got.(json.RawMessage)), "the arguments are forwarded as sent")
	}

	// No schema: any object, as it is, without decoding it.
	var none *Schema
	got, err := none.Check(json.RawMessage(`{"b":1,"a":2}`))
	require.NoError(t, err)
	require.Equal(t, `{"b":1,"a":2}`, string(got.(json.RawMessage)))
}

func TestCheckJSONRefusesAsCheckDoes(t *testing.T) {
	s := mustCompile(t, searchSchema)
	var none *Schema
	for _, tc := range []struct {
		schema *Schema
		raw    string
		want   string
	}{
		{s, `{"limit":"two"}`, `invalid arguments: $.query: required property is missing; $.limit: must be integer, got string "two"`},
		{s, `{"query":"x","limit":9007199254740993}`, "invalid arguments: $.limit:"},
		{s, `[1,2]`, "arguments must be a JSON object, got array [1,2]"},
		{s, `{"query":`, "arguments are not valid JSON"},
		{none, `{"query":`, "arguments are not valid JSON"},
		{none, `"text"`, "arguments must be a JSON object, got string"},
	} {
		_, err := tc.schema.Check(json.RawMessage(tc.raw))
		require.Error(t, err, tc.raw)
		require.Contains(t, err.Error(), tc.want, tc.raw)
	}
}

// What coercing reshapes (an empty object where an array is wanted: what a
// Lua table looks like) is forwarded reshaped, as before; no arguments are
// an empty object.
func TestCheckJSONReshaped(t *testing.T) {
	s := mustCompile(t, searchSchema)
	got, err := s.Check(json.RawMessage(`{"query":"x","tags":{}}`))
	require.NoError(t, err)
	require.Equal(t, map[string]any{"query": "x", "tags": []any{}}, got)

	open := mustCompile(t, openSchema)
	for _, raw := range []string{"", "null", " "} {
		_, err := open.Check(json.RawMessage(raw))
		require.ErrorContains(t, err, "required property is missing", "%q is no arguments", raw)
	}
	var none *Schema
	got, err = none.Check(json.RawMessage("null"))
	require.NoError(t, err)
	require.Equal(t, map[string]any{}, got)
}

// Whatever a client sends as arguments, checking it never panics, and
// what is let through as JSON text is exactly what was sent, and JSON.
func FuzzCheckJSON(f *testing.F) {
	for _, seed := range []string{`{"query":"x","limit":5.0}`, `{"tags":{}}`, `[1]`, `{"query":`, `null`, ``,
		`{"query":"x","options":{"depth":1e400}}`, `{"matrix":[[9007199254740993]]}`} {
		f.Add(seed)
	}
	s := mustCompile(f, searchSchema)
	f.Fuzz(func(t *testing.T, text string) {
		for _, schema := range []*Schema{s, nil} {
			got, err := schema.Check(json.RawMessage(text))
			if err != nil {
				continue
			}
			if raw, ok := got.(json.RawMessage); ok {
				if string(raw) != text || !json.Valid(raw) {
					t.Fatalf("Check(%q) let through %q", text, raw)
				}
			}
		}
	})
}
