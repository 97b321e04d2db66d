package argschema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func schema(t testing.TB, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v))
	return v
}

// Reference loops that never consume data are refused before the
// validator can follow them into a fatal stack overflow; recursive schemas
// that descend into the data are fine.
func TestUnsafeSchemasAreRefused(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"root refers to itself", `{"$ref": "#"}`, "reference loop that never consumes data: # → #"},
		{"defs a → b → a", `{"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}`,
			"reference loop that never consumes data: #/$defs/a → #/$defs/b → #/$defs/a"},
		{"through allOf", `{"type": "object", "allOf": [{"$ref": "#"}]}`, "reference loop that never consumes data: # → #/allOf/0 → #"},
		{"through $defs and allOf", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
			"reference loop that never consumes data: #/$defs/a → #/$defs/b → #/$defs/b/allOf/0 → #/$defs/a"},
		{"through not and an anchor", `{"$defs": {"x": {"$anchor": "x", "not": {"$ref": "#x"}}}, "$ref": "#x"}`,
			"reference loop that never consumes data: #/$defs/x → #/$defs/x/not → #/$defs/x"},
		{"through dependentSchemas", `{"type":"object","dependentSchemas":{"a":{"$ref":"#"}}}`,
			"reference loop that never consumes data: # → #/dependentSchemas/a → #"},
		{"through $dynamicRef", `{"type":"object","$dynamicRef":"#"}`, "reference loop that never consumes data: # → #"},
		// A network-path reference with no host resolves to the document
		// itself (found by fuzzing: it crashed the host).
		{"through an empty authority", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"//"}]}},"$ref":"#/$defs/a"}`,
			"reference loop that never consumes data: # → #/$defs/a → #/$defs/b → #/$defs/b/allOf/0 → #"},
		{"through the document's own $id", `{"$id":"https://example.com/s","allOf":[{"$ref":"https://example.com/s#"}]}`,
			"reference loop that never consumes data: # → #/allOf/0 → #"},
		{"a relative reference", `{"allOf":[{"$ref":"?x"}]}`, `$ref "?x" at #/allOf/0 is a relative reference; only references within the schema ("#/$defs/…") or to absolute URIs can be checked`},
		{"an $id inside", `{"$defs":{"a":{"$id":"a","allOf":[{"$ref":"a"}]}},"$ref":"#/$defs/a"}`,
			"an $id inside the schema (at #/$defs/a): references relative to it cannot be checked"},
		{"nested too deep", `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 70) + `{}` + strings.Repeat(`}`, 70) + `}}`,
			"nested deeper than 64 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Compile(schema(t, tt.schema))
			require.Nil(t, s)
			var ue *UnsafeError
			require.ErrorAs(t, err, &ue)
			require.Equal(t, "unusable input schema: "+tt.want, err.Error())
		})
	}
}

func TestRecursiveSchemasThatConsumeDataCompile(t *testing.T) {
	for _, s := range []string{
		`{"type": "object", "properties": {"child": {"$ref": "#"}}}`,
		`{"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"}`,
	} {
		c, err := Compile(schema(t, s))
		require.NoError(t, err, s)
		_, err = c.Check(map[string]any{"child": map[string]any{"child": map[string]any{}}, "kids": []any{}})
		require.NoError(t, err, s)
	}
}

func TestHugeSchemaIsRefused(t *testing.T) {
	props := map[string]any{}
	for i := 0; i < 30000; i++ {
		props[strings.Repeat("p", 30)+string(rune('a'+i%26))+strings.Repeat("x", i%7)+json.Number(rune(i)).String()] = map[string]any{"type": "string"}
	}
	_, err := Compile(map[string]any{"type": "object", "properties": props})
	var ue *UnsafeError
	require.ErrorAs(t, err, &ue)
}

// FuzzCompile: whatever a server sends as a schema, compiling it and
// checking arguments against it returns; it never crashes the host.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}}}`,
		`{"$ref":"#"}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"allOf":[{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"}`,
		`{"type":"object","properties":{"n":{"$ref":"#"}},"required":["n"]}`,
		`{"anyOf":[{"type":"integer","minimum":3},{"pattern":"^a+$"}]}`,
	} {
		f.Add(s, `{"a":"x","n":{}}`)
	}
	f.Fuzz(func(t *testing.T, schemaJSON, argsJSON string) {
		var raw, args any
		if json.Unmarshal([]byte(schemaJSON), &raw) != nil || json.Unmarshal([]byte(argsJSON), &args) != nil {
			return
		}
		s, err := Compile(raw)
		if err != nil {
			return
		}
		_, _ = s.Check(args)
	})
}
