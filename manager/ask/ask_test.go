package ask_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

func TestKindNames(t *testing.T) {
	require.Equal(t, "elicitation+roots", (ask.Elicitation | ask.Roots).String())
	require.Equal(t, "none", ask.Kind(0).String())
	for _, k := range []ask.Kind{ask.Elicitation, ask.Sampling, ask.Roots} {
		got, ok := ask.ParseKind(k.String())
		require.True(t, ok)
		require.Equal(t, k, got)
	}
	_, ok := ask.ParseKind("sampling+roots")
	require.False(t, ok)
}

// First skips candidates that do not offer the kind or pass, and stops at
// the first answer, error or not.
func TestFirst(t *testing.T) {
	roots := ask.FixedRoots([]string{"file:///a"})
	var asked []string
	try := func(c ask.Candidate) error {
		asked = append(asked, c.By)
		if c.By == "passes" {
			return ask.ErrNoAnswer
		}
		_, err := c.Answerer.ListRoots(context.Background(), ask.From{})
		return err
	}
	cands := []ask.Candidate{{Answerer: nil, By: "nil"}, {Answerer: roots, By: "passes"}, {Answerer: roots, By: "answers"}, {Answerer: roots, By: "never asked"}}
	c, err := ask.First(cands, ask.Roots, try)
	require.NoError(t, err)
	require.Equal(t, "answers", c.By)
	require.Equal(t, []string{"passes", "answers"}, asked)

	_, err = ask.First(cands, ask.Elicitation, try)
	require.ErrorIs(t, err, ask.ErrNoAnswer, "FixedRoots offers roots only")

	boom := errors.New("boom")
	c, err = ask.First(cands[1:], ask.Roots, func(ask.Candidate) error { return boom })
	require.ErrorIs(t, err, boom)
	require.Equal(t, "passes", c.By)
}

func TestCheckElicitation(t *testing.T) {
	form := &mcp.ElicitParams{Message: "?", RequestedSchema: map[string]any{
		"type": "object", "required": []any{"name"},
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "n": map[string]any{"type": "integer", "minimum": 1}},
	}}
	ok := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "x", "n": 2}}
	require.NoError(t, ask.CheckElicitation(form, ok))
	require.NoError(t, ask.CheckElicitation(form, &mcp.ElicitResult{Action: "decline"}))
	require.ErrorContains(t, ask.CheckElicitation(form, &mcp.ElicitResult{Action: "yes"}), `got "yes"`)
	require.ErrorContains(t, ask.CheckElicitation(form, nil), "no answer")
	err := ask.CheckElicitation(form, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": 0}})
	require.ErrorContains(t, err, "does not fit the requested form")
	require.ErrorContains(t, err, "name")
	require.ErrorContains(t, err, "n")
	url := &mcp.ElicitParams{Mode: "url", URL: "https://example.com"}
	require.NoError(t, ask.CheckElicitation(url, &mcp.ElicitResult{Action: "accept"}))
}

// A server's requested schema and an answer are untrusted: filling in the
// defaults and checking never panic nor hang, whatever they are.
func FuzzCheckElicitation(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x"}`)
	f.Add(`{"$ref":"#"}`, `{}`)
	f.Add(`{"type":"object","properties":{"a":{"type":"integer","default":"x"},"b":{"default":null}}}`, `{}`)
	f.Add(`{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"r"}]}}}`, `{"c":"b"}`)
	f.Fuzz(func(t *testing.T, schema, content string) {
		var s any
		if json.Unmarshal([]byte(schema), &s) != nil {
			return
		}
		var c map[string]any
		_ = json.Unmarshal([]byte(content), &c)
		p := &mcp.ElicitParams{RequestedSchema: s}
		_ = ask.CheckElicitation(p, ask.WithDefaults(p, &mcp.ElicitResult{Action: "accept", Content: c}))
	})
}
