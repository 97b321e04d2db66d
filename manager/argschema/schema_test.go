package argschema

// Unit tests of argument validation on compiled schemas, and the
// benchmark of the per-call cost. The end-to-end tests (the server never
// sees an invalid call) are in the manager's registry_test.go.

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/demo"
)

// mustCompile compiles a schema given as JSON text, the way discovery
// receives it from the SDK (decoded into map[string]any).
func mustCompile(t testing.TB, schemaJSON string) *Schema {
	t.Helper()
	var raw any
	require.NoError(t, json.Unmarshal([]byte(schemaJSON), &raw))
	s, err := Compile(raw)
	require.NoError(t, err)
	require.NotNil(t, s)
	return s
}

// searchSchema exercises every rule: required and optional properties,
// integers, arrays (of arrays), a nested closed object with an enum, and a
// closed top level.
const searchSchema = `{
	"type": "object",
	"properties": {
		"query":   {"type": "string"},
		"limit":   {"type": "integer", "minimum": 1},
		"tags":    {"type": "array", "items": {"type": "string"}},
		"matrix":  {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
		"meta":    {"type": "object"},
		"options": {
			"type": "object",
			"properties": {
				"depth": {"type": "integer"},
				"mode":  {"type": "string", "enum": ["fast", "full"]}
			},
			"required": ["depth"],
			"additionalProperties": false
		}
	},
	"required": ["query"],
	"additionalProperties": false
}`

// openSchema leaves additionalProperties unset: extra arguments pass.
const openSchema = `{
	"type": "object",
	"properties": {"text": {"type": "string"}},
	"required": ["text"]
}`

func TestCheckArgs(t *testing.T) {
	search := mustCompile(t, searchSchema)
	open := mustCompile(t, openSchema)
	tests := []struct {
		name    string
		schema  *Schema
		args    any
		want    any    // the coerced arguments, when valid
		wantErr string // the whole message, when not
	}{
		{
			name: "valid", schema: search,
			args: map[string]any{"query": "go", "limit": int64(5)},
			want: map[string]any{"query": "go", "limit": int64(5)},
		},
		{
			name: "nil arguments are an empty object", schema: open, args: nil,
			wantErr: "invalid arguments: $.text: required property is missing",
		},
		{
			name: "not an object", schema: open, args: []any{"x"},
			wantErr: `arguments must be a JSON object, got array ["x"]`,
		},
		{
			name: "missing required", schema: search, args: map[string]any{},
			wantErr: "invalid arguments: $.query: required property is missing",
		},
		{
			name: "wrong type", schema: search, args: map[string]any{"query": int64(42)},
			wantErr: "invalid arguments: $.query: must be string, got integer 42",
		},
		{
			name: "non-integral number where an integer is wanted", schema: search,
			args:    map[string]any{"query": "go", "limit": 2.5},
			wantErr: "invalid arguments: $.limit: must be integer, got number 2.5",
		},
		{
			name: "constraint other than type", schema: search,
			args:    map[string]any{"query": "go", "limit": int64(0)},
			wantErr: "invalid arguments: $.limit: must be at least 1, got integer 0",
		},
		{
			name: "nested property: every violation at its own path", schema: search,
			args:    map[string]any{"query": "go", "options": map[string]any{"depth": "deep", "mode": "slow"}},
			wantErr: `invalid arguments: $.options.depth: must be integer, got string "deep"; $.options.mode: enum: slow does not equal any of: [fast full]`,
		},
		{
			name: "nested required", schema: search,
			args:    map[string]any{"query": "go", "options": map[string]any{"mode": "fast"}},
			wantErr: "invalid arguments: $.options.depth: required property is missing",
		},
		{
			name: "nested closed object", schema: search,
			args:    map[string]any{"query": "go", "options": map[string]any{"depth": int64(1), "mdoe": "fast"}},
			wantErr: `invalid arguments: $.options.mdoe: unexpected property; did you mean "mode"?`,
		},
		{
			name: "array item", schema: search,
			args:    map[string]any{"query": "go", "tags": []any{"a", int64(7)}},
			wantErr: "invalid arguments: $.tags[1]: must be string, got integer 7",
		},
		{
			name: "item of a nested array", schema: search,
			args:    map[string]any{"query": "go", "matrix": []any{[]any{int64(1)}, []any{int64(2), "x"}}},
			wantErr: `invalid arguments: $.matrix[1][1]: must be integer, got string "x"`,
		},
		{
			name: "closed schema, typo gets a did-you-mean", schema: search,
			args:    map[string]any{"qurey": "go"},
			wantErr: `invalid arguments: $.query: required property is missing; $.qurey: unexpected property; did you mean "query"?`,
		},
		{
			name: "closed schema, nothing close: the accepted names", schema: search,
			args:    map[string]any{"query": "go", "verbose": true},
			wantErr: "invalid arguments: $.verbose: unexpected property (the tool accepts: limit, matrix, meta, options, query, tags)",
		},
		{
			name: "every violation, in a stable order", schema: search,
			args:    map[string]any{"limit": "ten", "tags": "a,b", "zzz": int64(1)},
			wantErr: `invalid arguments: $.query: required property is missing; $.zzz: unexpected property (the tool accepts: limit, matrix, meta, options, query, tags); $.limit: must be integer, got string "ten"; $.tags: must be array, got string "a,b"`,
		},
		{
			name: "open schema: extra arguments pass unchanged", schema: open,
			args: map[string]any{"text": "hi", "extra": map[string]any{"x": int64(1)}},
			want: map[string]any{"text": "hi", "extra": map[string]any{"x": int64(1)}},
		},
		{
			name: "no schema: anything that is an object passes", schema: nil,
			args: map[string]any{"whatever": 1.5},
			want: map[string]any{"whatever": 1.5},
		},
		{
			name: "empty table where an array is wanted is sent as []", schema: search,
			args: map[string]any{"query": "go", "tags": map[string]any{}, "matrix": []any{map[string]any{}}},
			want: map[string]any{"query": "go", "tags": []any{}, "matrix": []any{[]any{}}},
		},
		{
			name: "empty table where an object is wanted stays an object", schema: search,
			args: map[string]any{"query": "go", "meta": map[string]any{}},
			want: map[string]any{"query": "go", "meta": map[string]any{}},
		},
		{
			name: "integral floats where integers are wanted are sent as integers", schema: search,
			args: map[string]any{"query": "go", "limit": 3.0, "matrix": []any{[]any{1.0, -2.0}}, "options": map[string]any{"depth": 4.0}},
			want: map[string]any{"query": "go", "limit": int64(3), "matrix": []any{[]any{int64(1), int64(-2)}}, "options": map[string]any{"depth": int64(4)}},
		},
		{
			// JSON Schema counts 1e300 as an integer, but no server would
			// read it as one (int64 cannot hold it; a double holds
			// integers exactly only up to 2^53): it is refused here rather
			// than failing in the server.
			name: "an integral number beyond 2^53 is no integer", schema: search,
			args:    map[string]any{"query": "go", "limit": 1e300},
			wantErr: "invalid arguments: $.limit: must be integer, got number 1e+300 (beyond ±9007199254740991, the integers a JSON number holds exactly)",
		},
		{
			name: "an integer beyond 2^53 in a flat schema", schema: mustCompile(t, `{"type": "object", "properties": {"n": {"type": "integer"}}}`),
			args:    map[string]any{"n": -1e19},
			wantErr: "invalid arguments: $.n: must be integer, got number -10000000000000000000 (beyond ±9007199254740991, the integers a JSON number holds exactly)",
		},
		{
			name: "null is said as JSON says it", schema: search,
			args:    map[string]any{"query": nil},
			wantErr: "invalid arguments: $.query: must be string, got null",
		},
		{
			name: "an object is shown as JSON", schema: search,
			args:    map[string]any{"query": map[string]any{}, "limit": map[string]any{"a\x1b[2J": []any{true}}},
			wantErr: `invalid arguments: $.limit: must be integer, got object {"a\u001b[2J":[true]}; $.query: must be string, got object {}`,
		},
		{
			name: "a long value is cut", schema: search,
			args:    map[string]any{"query": []any{strings.Repeat("é", 100)}},
			wantErr: `invalid arguments: $.query: must be string, got array ["` + strings.Repeat("é", 29) + `…`,
		},
		{
			name: "a number above the maximum", schema: mustCompile(t, `{"type": "object", "properties": {"p": {"type": "number", "exclusiveMaximum": 1}}}`),
			args:    map[string]any{"p": 1.0},
			wantErr: "invalid arguments: $.p: must be less than 1, got integer 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.schema.Check(tt.args)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got) // require.Equal compares types: int64 ≠ float64
		})
	}
}

// A float that cannot be an integer stays a float, so the type error names
// it; NaN and infinities never become integers.
func TestCoerceLeavesNonIntegralNumbers(t *testing.T) {
	s := mustCompile(t, `{"type": "object", "properties": {"n": {"type": "integer"}}}`)
	for _, f := range []float64{0.5, math.Inf(1), math.NaN(), math.MaxFloat64} {
		got := coerce(map[string]any{"n": f}, s.schema).(map[string]any)["n"]
		_, isFloat := got.(float64)
		require.True(t, isFloat, "%v became %T", f, got)
	}
	got := coerce(map[string]any{"n": math.Copysign(0, -1)}, s.schema).(map[string]any)["n"]
	require.Equal(t, int64(0), got)
}

// A tool whose schema cannot be compiled is still callable: discovery keeps
// no schema for it and the server judges the arguments.
func TestCompileSchemaOfOddInputs(t *testing.T) {
	s, err := Compile(nil)
	require.NoError(t, err)
	require.Nil(t, s)

	_, err = Compile(map[string]any{"type": 42})
	require.Error(t, err)

	// A $ref into the root cannot be resolved on its own: the root check
	// still rejects a bad value, reported at the top.
	s = mustCompile(t, `{
		"type": "object",
		"$defs": {"n": {"type": "integer"}},
		"properties": {"count": {"$ref": "#/$defs/n"}}
	}`)
	_, err = s.Check(map[string]any{"count": "x"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "invalid arguments: $")
	_, err = s.Check(map[string]any{"count": 2.0})
	require.NoError(t, err)
}

// demoTool returns a tool of the demo server as discovery receives it: over
// a real (in-memory) session, its inputSchema decoded by the SDK.
func demoTool(tb testing.TB, name string) *mcp.Tool {
	tb.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := demo.NewServer().Connect(ctx, st, nil)
	require.NoError(tb, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).Connect(ctx, ct, nil)
	require.NoError(tb, err)
	defer func() {
		_ = cs.Close()
		_ = ss.Wait()
	}()
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(tb, err)
		if tool.Name == name {
			return tool
		}
	}
	tb.Fatalf("the demo server has no tool %q", name)
	return nil
}

// The demo's add tool, as the manager caches it: valid calls pass with
// integers, invalid ones name the argument.
func TestCheckArgsDemoAdd(t *testing.T) {
	s, err := Compile(demoTool(t, "add").InputSchema)
	require.NoError(t, err)
	got, err := s.Check(map[string]any{"a": 2.0, "b": int64(40)})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"a": int64(2), "b": int64(40)}, got)

	_, err = s.Check(map[string]any{"a": "two"})
	require.EqualError(t, err, `invalid arguments: $.b: required property is missing; $.a: must be integer, got string "two"`)
}

// BenchmarkCheck measures validation of one call with the cached schema of
// the demo add tool (the target is ≤ 5µs per call). The general/ variants
// run the same checks with the allocation-free flat path turned off, which
// is what the flat path has to pay for itself against:
//
//	go test ./manager/argschema -run '^$' -bench BenchmarkCheck -benchmem
func BenchmarkCheck(b *testing.B) {
	s, err := Compile(demoTool(b, "add").InputSchema)
	require.NoError(b, err)
	require.NotNil(b, s.flat, "the demo add tool's schema is flat")
	general := *s
	general.flat = nil
	for _, variant := range []struct {
		name   string
		schema *Schema
	}{{"flat", s}, {"general", &general}} {
		for _, bc := range []struct {
			name  string
			args  map[string]any
			valid bool
		}{
			{"lua_integers", map[string]any{"a": int64(2), "b": int64(40)}, true},
			{"json_floats", map[string]any{"a": 2.0, "b": 40.0}, true},
			{"invalid", map[string]any{"a": "two"}, false},
		} {
			b.Run(variant.name+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := variant.schema.Check(bc.args); (err == nil) != bc.valid {
						b.Fatalf("Check(%v) = %v, want valid=%v", bc.args, err, bc.valid)
					}
				}
			})
		}
	}
}

// The allocation-free check of flat schemas must agree with the general
// validator on every input, or a call could pass that should be refused.
func TestFlatSchemaAgreesWithValidator(t *testing.T) {
	schemas := []map[string]any{
		{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}, "additionalProperties": false},
		{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "integer"}, "b": map[string]any{"type": "number"}, "c": map[string]any{"type": "boolean", "description": "c"}}},
	}
	args := []map[string]any{
		{}, {"text": "x"}, {"text": 1.0}, {"text": "x", "extra": true}, {"a": 1.0}, {"a": 1.5}, {"a": int64(2), "b": 2.5, "c": true},
		{"b": "no"}, {"c": 1.0}, {"a": json.Number("3")}, {"a": json.Number("3.5")}, {"a": nil}, {"text": nil}, {"text": []any{}},
	}
	for i, raw := range schemas {
		a, err := Compile(raw)
		require.NoError(t, err)
		require.NotNil(t, a.flat, "schema %d is flat", i)
		for _, arg := range args {
			want := a.root.Validate(arg) == nil
			require.Equal(t, want, a.flat.valid(arg), "schema %d, args %v", i, arg)
		}
	}
	// Anything beyond the flat keywords goes to the general validator.
	for _, raw := range []map[string]any{
		{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer", "minimum": 1}}},
		{"type": "object", "properties": map[string]any{"s": map[string]any{"type": "string", "enum": []any{"a"}}}},
		{"type": "object", "properties": map[string]any{"o": map[string]any{"type": "object"}}},
		{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}, "additionalProperties": map[string]any{"type": "string"}},
	} {
		a, err := Compile(raw)
		require.NoError(t, err)
		require.Nil(t, a.flat, "%v is not flat", raw)
	}
}
