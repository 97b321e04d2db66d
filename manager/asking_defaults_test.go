package manager_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// defaultsForm has five fields, each with a default: one of each kind a
// form may hold.
var defaultsForm = map[string]any{
	"message": "Confirm the settings",
	"requestedSchema": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":     map[string]any{"type": "string", "default": "John Doe"},
			"age":      map[string]any{"type": "integer", "default": 30},
			"score":    map[string]any{"type": "number", "default": 95.5},
			"status":   map[string]any{"type": "string", "enum": []any{"active", "inactive", "pending"}, "default": "active"},
			"verified": map[string]any{"type": "boolean", "default": true},
		},
		"required": []any{"name", "age", "score", "status", "verified"},
	},
}

// An accepted form that leaves fields out is sent with the form's
// defaults for them, whether the answer has no content or some: the
// server gets all five fields, and what the answer gave is kept.
func TestElicitationDefaultsFilledIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content map[string]any
		want    map[string]any
	}{
		{"no content", nil, map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}},
		{"empty", map[string]any{}, map[string]any{"name": "John Doe", "age": 30.0, "score": 95.5, "status": "active", "verified": true}},
		{"some given", map[string]any{"name": "Ada", "verified": false}, map[string]any{"name": "Ada", "age": 30.0, "score": 95.5, "status": "active", "verified": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := procManager(t)
			m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: accept(tc.content)})
			require.NoError(t, m.Add("a", asker(t, nil)))
			r := askVia(t, m, manager.CallOptions{}, "elicitation/create", defaultsForm)
			require.Nil(t, r.Error, "%+v", r.Error)
			require.Equal(t, "accept", r.Result["action"])
			require.Equal(t, tc.want, r.Result["content"])
		})
	}
}

// What is sent is checked after the defaults are filled in: a given
// field outside its choices is refused (and only it: the fields left out
// took their defaults), and the server gets an error, not the answer.
func TestElicitationDefaultsThenChecked(t *testing.T) {
	m, tl := procManager(t)
	m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"status": "gone"})})
	require.NoError(t, m.Add("a", asker(t, nil)))
	r := askVia(t, m, manager.CallOptions{}, "elicitation/create", defaultsForm)
	require.NotNil(t, r.Error)
	require.Contains(t, r.Error.Message, "does not fit the requested form")
	require.Contains(t, r.Error.Message, "status")
	require.NotContains(t, r.Error.Message, "verified", "the fields left out took their defaults before the check")
	e := only(tl.until("a", events.KindElicitation, patience), events.KindElicitation)[0]
	require.Contains(t, e.Fields["error"], "status")
}
