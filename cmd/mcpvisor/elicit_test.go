package main

// The terminal's side of elicitation, driven through its seam: a scripted
// person answers line by line, and what was shown is checked.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chzyer/readline"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/browser"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// scripted is a person answering: each readLine takes the next answer (a
// string, or an error such as Ctrl-C's) and records the prompt.
type scripted struct {
	out     bytes.Buffer
	answers []any
	prompts []string
}

func (s *scripted) Write(p []byte) (int, error) { return s.out.Write(p) }

func (s *scripted) readLine(ctx context.Context, prompt string) (string, error) {
	s.prompts = append(s.prompts, prompt)
	s.out.WriteString(prompt)
	if len(s.answers) == 0 {
		<-ctx.Done() // the person says nothing more
		return "", ctx.Err()
	}
	a := s.answers[0]
	s.answers = s.answers[1:]
	if err, ok := a.(error); ok {
		return "", err
	}
	s.out.WriteString(a.(string) + "\n")
	return a.(string), nil
}

// everythingForm is the form server-everything's trigger-elicitation-request
// sends (as decoded JSON).
func everythingForm() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "Please provide inputs for the following fields:", RequestedSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name":      map[string]any{"title": "String", "type": "string", "description": "Your full, legal name"},
			"check":     map[string]any{"title": "Boolean", "type": "boolean", "description": "Agree to the terms and conditions"},
			"firstLine": map[string]any{"title": "String with default", "type": "string", "default": "It was a dark and stormy night."},
			"email":     map[string]any{"title": "String with email format", "type": "string", "format": "email"},
			"birthdate": map[string]any{"title": "String with date format", "type": "string", "format": "date"},
			"integer":   map[string]any{"title": "Integer", "type": "integer", "minimum": 1.0, "maximum": 100.0, "default": 42.0},
			"number":    map[string]any{"title": "Number in range 1-1000", "type": "number", "minimum": 0.0, "maximum": 1000.0, "default": 3.14},
			"friend": map[string]any{"title": "Untitled Single Select Enum", "type": "string",
				"enum": []any{"Monica", "Rachel", "Joey"}, "default": "Monica"},
			"instruments": map[string]any{"title": "Untitled Multiple Select Enum", "type": "array", "minItems": 1.0, "maxItems": 2.0,
				"items": map[string]any{"type": "string", "enum": []any{"Guitar", "Piano", "Violin"}}, "default": []any{"Guitar"}},
			"hero": map[string]any{"title": "Titled Single Select Enum", "type": "string",
				"oneOf": []any{map[string]any{"const": "hero-1", "title": "Superman"}, map[string]any{"const": "hero-2", "title": "Green Lantern"}}},
			"fish": map[string]any{"title": "Titled Multiple Select Enum", "type": "array",
				"items": map[string]any{"anyOf": []any{map[string]any{"const": "fish-1", "title": "Tuna"}, map[string]any{"const": "fish-2", "title": "Salmon"}}}},
			"pet": map[string]any{"title": "Legacy Titled Single Select Enum", "type": "string",
				"enum": []any{"pet-1", "pet-2"}, "enumNames": []any{"Cats", "Dogs"}},
		},
		"required": []any{"name"},
	}}
}

var noBrowser opener = func(string) ([]string, error) { return nil, errNoBrowser }

func TestElicitFormAsksEachField(t *testing.T) {
	p := &scripted{answers: []any{
		"", "Ada Lovelace", // name: required, so asked again
		"1815-13-10", "1815-12-10", // birthdate
		"maybe", "y", // check
		"ada@", "ada@example.com", // email
		"",                             // firstLine: the default
		"2, 2",                         // fish: Salmon, once
		"Rachel",                       // friend, by value
		"Green lantern",                // hero, by its label
		"Piano, Violin, Guitar", "3,1", // instruments: at most 2
		"4.5", "500", "7", // integer: whole, within range
		"abc", "", // number: the default
		"2", // pet, by number
	}}
	res, err := elicit(context.Background(), p, ask.From{Server: "everything"}, everythingForm(), noBrowser)
	require.NoError(t, err)
	require.Equal(t, &mcp.ElicitResult{Action: "accept", Content: map[string]any{
		"name": "Ada Lovelace", "birthdate": "1815-12-10", "check": true, "email": "ada@example.com",
		"firstLine": "It was a dark and stormy night.", "fish": []any{"fish-2"}, "hero": "hero-2",
		"instruments": []any{"Violin", "Guitar"}, "integer": int64(7), "friend": "Rachel", "number": 3.14, "pet": "pet-2",
	}}, res)
	require.Empty(t, p.answers, "every answer was asked for")

	out := p.out.String()
	for _, want := range []string{
		`── server "everything" asks ──`,
		"Please provide inputs for the following fields:",
		"  Your full, legal name\nString (text, required): ",
		"  ✗ a value is required (Ctrl-C declines the whole form)",
		`  ✗ "1815-13-10" is not a date like 2006-01-02`,
		"Boolean (y/n): maybe\n  ✗ answer y or n",
		`String with default (text) [It was a dark and stormy night.]: `,
		"  1) Tuna  2) Salmon\nTitled Multiple Select Enum (numbers 1-2, comma-separated): ",
		"  ✗ 3 chosen; choose 1 to 2",
		"Integer (whole number, 1 to 100) [42]: 4.5\n  ✗ 4.5 is not a whole number",
		"  ✗ 500 is out of range: 1 to 100",
		"  1) Monica  2) Rachel  3) Joey\nUntitled Single Select Enum (1-3) [Monica]: ",
		"Untitled Multiple Select Enum (numbers 1-3, comma-separated, 1 to 2 choices) [Guitar]: ",
		"  1) Cats  2) Dogs\nLegacy Titled Single Select Enum (1-2): ",
		`── sent to server "everything" ──`,
	} {
		require.Contains(t, out, want)
	}
	require.Equal(t, "String (text, required): ", p.prompts[0], "the required field comes first")
}

// An optional field left empty is not sent; Ctrl-C or Ctrl-D anywhere
// declines the whole form.
func TestElicitFormOptionalAndDecline(t *testing.T) {
	form := &mcp.ElicitParams{Message: "?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
		"a": map[string]any{"type": "string"}, "b": map[string]any{"type": "boolean"}}}}
	p := &scripted{answers: []any{"", "n"}}
	res, err := elicit(context.Background(), p, ask.From{Server: "s"}, form, noBrowser)
	require.NoError(t, err)
	require.Equal(t, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"b": false}}, res)

	for _, stop := range []error{readline.ErrInterrupt, io.EOF} {
		p := &scripted{answers: []any{"x", stop}}
		res, err := elicit(context.Background(), p, ask.From{Server: "s"}, form, noBrowser)
		require.NoError(t, err)
		require.Equal(t, &mcp.ElicitResult{Action: "decline"}, res, "%v", stop)
		require.Contains(t, p.out.String(), "── declined ──")
	}
}

// When the server stops waiting, the question ends with the request's
// cause and says so.
func TestElicitServerStopsWaiting(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	p := &scripted{}
	_, err := elicit(ctx, p, ask.From{Server: "s", Client: "claude"}, everythingForm(), noBrowser)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, p.out.String(), `── server "s" (for client "claude") stopped waiting ──`)
}

// What the server sends is shown escaped: it cannot drive the terminal.
func TestElicitEscapesServerText(t *testing.T) {
	form := &mcp.ElicitParams{Message: "hi\x1b]0;PWNED\x07\nsecond line", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"x": map[string]any{"type": "string", "title": "T\x1b[2J", "description": "d\u202e",
			"enum": []any{"a\x1b[31m"}}}}}
	p := &scripted{answers: []any{"1"}}
	_, err := elicit(context.Background(), p, ask.From{Server: "e\x1bvil"}, form, noBrowser)
	require.NoError(t, err)
	out := p.out.String()
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "\u202e")
	for _, want := range []string{`server "e\x1bvil"`, `hi\x1b]0;PWNED\x07` + "\nsecond line", `T\x1b[2J (1-1)`, `1) a\x1b[31m`, `d\u202e`} {
		require.Contains(t, out, want)
	}
}

func TestElicitURL(t *testing.T) {
	params := &mcp.ElicitParams{Mode: "url", Message: "Log in, please", URL: "https://example.com/auth?x=1", ElicitationID: "e1"}
	var opened []string
	open := func(u string) ([]string, error) { opened = append(opened, u); return []string{"firefox", u}, nil }
	for _, tc := range []struct {
		answer any
		want   string
	}{{"y", "accept"}, {"", "decline"}, {"no", "decline"}, {readline.ErrInterrupt, "decline"}} {
		p := &scripted{answers: []any{tc.answer}}
		res, err := elicit(context.Background(), p, ask.From{Server: "auth"}, params, open)
		require.NoError(t, err)
		require.Equal(t, tc.want, res.Action, "%v", tc.answer)
		require.Equal(t, []string{"Done? [y/N]: "}, p.prompts)
		require.Contains(t, p.out.String(), "── server \"auth\" asks you to open a link ──\nLog in, please\n  https://example.com/auth?x=1\n(Opened with firefox.)\n")
	}
	require.Equal(t, "https://example.com/auth?x=1", opened[0])

	p := &scripted{answers: []any{"y"}}
	_, err := elicit(context.Background(), p, ask.From{Server: "auth"}, params, noBrowser)
	require.NoError(t, err)
	require.Contains(t, p.out.String(), "(Open it in your browser; $BROWSER, when set, opens it for you.)")
}

func TestBrowserCommands(t *testing.T) {
	const u = "https://example.com/a b"
	require.Equal(t, [][]string{{"firefox", u}}, browser.Commands("firefox", u, false))
	require.Equal(t, [][]string{{"firefox", "--new-tab", u}, {"lynx", "-dump", "<" + u + ">"}},
		browser.Commands("firefox --new-tab::lynx -dump <%s>", u, false))
	require.Empty(t, browser.Commands("", u, false))
	require.Empty(t, browser.Commands("none", u, true))

	// The first command that starts opens it, with the URL as one argument.
	dir := t.TempDir()
	got := filepath.Join(dir, "opened")
	script := filepath.Join(dir, "browser.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+got+".tmp && mv "+got+".tmp "+got+"\n"), 0o755))
	argv, err := openURL("/no/such/browser:"+script+" %s", "https://example.com/x?a=1&b=2")
	require.NoError(t, err)
	require.Equal(t, []string{script, "https://example.com/x?a=1&b=2"}, argv)
	// The browser is a process of its own: no event to wait on.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		b, err := os.ReadFile(got)
		require.NoError(c, err, "the browser command never ran")
		assert.Equal(c, "https://example.com/x?a=1&b=2", string(b))
	}, 10*time.Second, 10*time.Millisecond)

	_, err = openURL(script, "javascript:alert(1)")
	require.ErrorContains(t, err, "only http and https URLs are opened")
	for _, unset := range []string{"", "none", " : "} {
		_, err = openURL(unset, "https://example.com")
		require.True(t, errors.Is(err, errNoBrowser), "%q", unset)
	}
	_, err = openURL("/no/such/browser", "https://example.com")
	require.Error(t, err)
	require.False(t, strings.Contains(err.Error(), "only http"))
}
