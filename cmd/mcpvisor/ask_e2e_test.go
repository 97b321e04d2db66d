//go:build linux

package main

// What a server asks of its client, end to end: the reference server
// (server-everything) asks for a form, a URL, a completion and the roots,
// and Lua handlers or the person at the REPL answer.
//
// These need the manager to declare the answerer's offers to servers as
// client capabilities (elicitation with its form and URL modes, sampling,
// roots) and to route their requests to it (manager/ask). Until it does,
// server-everything does not register the tools that ask, and these tests
// fail saying so.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/interop"
)

// everythingConfig is a startup.lua declaring server-everything over stdio,
// followed by more.
func everythingConfig(t *testing.T, more string) string {
	t.Helper()
	var argv []string
	for _, a := range interop.StdioCommand(t) {
		argv = append(argv, fmt.Sprintf("%q", a))
	}
	path := filepath.Join(t.TempDir(), "startup.lua")
	src := fmt.Sprintf("mcp_add(\"everything\", {command = {%s}})\n%s", strings.Join(argv, ", "), more)
	require.NoError(t, os.WriteFile(path, []byte(src), 0o644))
	return path
}

// waitTools defines wait_tools(name, …) in Lua: it waits until
// server-everything lists the named tools. Those that ask are registered
// only after the connection, for a client that declared the capability.
const waitTools = `
function wait_tools(...)
  assert(mcp_wait("everything", "connected", 30))
  for _, name in ipairs{...} do
    local found = false
    for _ = 1, 400 do
      for _, t in ipairs(mcp_tools("everything")) do found = found or t.tool == name end
      if found then break end
      sleep(0.025)
    end
    assert(found, "server-everything never listed " .. name .. ": the client did not declare the capability it needs (is the manager declaring the answerer's offers?)")
  end
end
`

// Lua handlers answer every kind of request server-everything makes.
func TestEverythingAsksLuaHandlers(t *testing.T) {
	cfg := everythingConfig(t, waitTools+`
mcp_handle("elicitation", function(req, server)
  if req.mode == "url" then return {action = "accept"} end
  return {action = "accept", content = {name = "Ada from " .. server, check = true, integer = 7}}
end)
mcp_handle("sampling", function(req) return {content = "sampled: " .. req.messages[1].content.text, model = "lua-model"} end)
mcp_roots{{uri = "file:///srv/work", name = "work"}}
`)
	code := `wait_tools("trigger-elicitation-request", "trigger-url-elicitation", "trigger-sampling-request", "get-roots-list")
local function call(name, args)
  local res, err = mcp_call("everything." .. name, args or {})
  if not res then return "ERROR " .. tostring(err) end
  return res.text
end
print(call("trigger-elicitation-request"))
print(call("trigger-url-elicitation", {url = "https://example.com/login"}))
print(call("trigger-sampling-request", {prompt = "hello", maxTokens = 5}))
print(call("get-roots-list"))`
	o := runBinary(t, invocation{args: []string{"--no-watch", "-c", cfg, "-e", code}})
	require.Equal(t, 0, o.code, "stderr: %s", o.stderr)
	for _, want := range []string{
		"✅ User provided the requested information!",
		"- Name: Ada from everything",
		"- Agreed to terms: true",
		"- Favorite Integer: 7",
		"✅ User completed the URL elicitation flow.",
		"URL: https://example.com/login",
		`"text": "sampled: Resource trigger-sampling-request context: hello"`,
		`"model": "lua-model"`,
		"Current MCP Roots (1 total)",
		"1. work\n   URI: file:///srv/work",
	} {
		require.Contains(t, o.stdout, want)
	}
	require.NotContains(t, o.stdout, "ERROR")
}

// Without a Lua handler, the person at the REPL answers: the form field by
// field, and the URL opened with $BROWSER.
func TestEverythingAsksAtTheREPL(t *testing.T) {
	dir := t.TempDir()
	opened := filepath.Join(dir, "opened")
	browser := filepath.Join(dir, "browser.sh")
	require.NoError(t, os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+opened+"\n"), 0o755))
	cfg := everythingConfig(t, waitTools)
	term := startREPLEnv(t, []string{"BROWSER=" + browser}, "--no-hud", "--no-watch", "-c", cfg)
	term.waitLine("the prompt", func(l string) bool { return strings.HasPrefix(l, "mcp>") })
	term.typeLine(`wait_tools("trigger-elicitation-request", "trigger-url-elicitation") return "ready"`)
	ready := term.waitLine("the tools", func(l string) bool { return l == "ready" || strings.HasPrefix(l, "error: ") })
	require.Equal(t, "ready", ready)

	term.typeLine(`return mcp_call("everything.trigger-elicitation-request", {}).text`)
	term.waitLine("the question", func(l string) bool { return l == `── server "everything" asks ──` })
	const noAnswer = "\x00" // a line that is shown, not a prompt
	for _, f := range []struct{ prompt, answer string }{
		{"String (text, required): ", "Ada Lovelace"},
		{"String with date format (date, YYYY-MM-DD): ", "1815-12-10"},
		{"Boolean (y/n): ", "y"},
		{"String with email format (email): ", "not an email"},
		{`  ✗ "not an email" is not an email address`, noAnswer},
		{"String with email format (email): ", ""}, // asked again; left out
		{"String with default (text) [It was a dark and stormy night.]: ", ""},
		{"String with uri format (uri): ", ""},
		{"Integer (whole number, 1 to 100) [42]: ", "7"},
		{"Legacy Titled Single Select Enum (1-5) [Cats]: ", "2"},
		{"Number in range 1-1000 (number, 0 to 1000) [3.14]: ", ""},
		{"Titled Multiple Select Enum (numbers 1-3, comma-separated, 1 to 3 choices) [Tuna]: ", "1, 3"},
		{"Titled Single Select Enum (1-3) [Superman]: ", ""},
		{"Untitled Multiple Select Enum (numbers 1-5, comma-separated, 1 to 3 choices) [Guitar]: ", ""},
		{"Untitled Single Select Enum (1-6) [Monica]: ", "Joey"},
	} {
		prompt := strings.TrimRight(f.prompt, " ") // the screen has no trailing spaces
		term.waitLine(prompt, func(l string) bool { return strings.HasPrefix(l, prompt) })
		if f.answer != noAnswer {
			term.typeLine(f.answer)
		}
	}
	term.waitLine("the answer sent", func(l string) bool { return l == `── sent to server "everything" ──` })
	term.waitLine("the server's reply", func(l string) bool { return l == "✅ User provided the requested information!" })
	// The reply's lines after its first may still be on their way.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out := term.p.stdout.String()
		for _, want := range []string{"- Name: Ada Lovelace", "- Agreed to terms: true", "- Birthdate: 1815-12-10", "- Favorite Integer: 7",
			`"legacyTitledEnum": "pet-2"`, `"untitledSingleSelectEnum": "Joey"`, `"fish-1"`, `"fish-3"`} {
			assert.Contains(c, out, want)
		}
	}, 10*time.Second, 10*time.Millisecond)

	term.typeLine(`return mcp_call("everything.trigger-url-elicitation", {url = "https://example.com/login?step=1"}).text`)
	term.waitLine("the link", func(l string) bool { return l == "  https://example.com/login?step=1" })
	term.waitLine("opened", func(l string) bool { return l == "(Opened with "+browser+".)" })
	term.waitLine("done?", func(l string) bool { return strings.HasPrefix(l, "Done? [y/N]:") })
	// $BROWSER is a process of its own: no event to wait on.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		b, err := os.ReadFile(opened)
		require.NoError(c, err, "$BROWSER was not run")
		assert.Equal(c, "https://example.com/login?step=1", string(b), "$BROWSER was not run with the URL")
	}, 10*time.Second, 10*time.Millisecond)
	term.typeLine("y")
	term.waitLine("the server's reply", func(l string) bool { return l == "✅ User completed the URL elicitation flow." })

	// Ctrl-C declines.
	term.typeLine(`return mcp_call("everything.trigger-elicitation-request", {}).text`)
	term.waitLine("the question", func(l string) bool { return strings.HasPrefix(l, "String (text, required):") })
	term.send("\x03")
	term.waitLine("declined", func(l string) bool { return l == "❌ User declined to provide the requested information." })

	term.send("\x04")
	if !term.p.wait(shutdownGrace) {
		t.Fatalf("the REPL did not exit after Ctrl-D; screen:\n%s", strings.Join(term.lines(), "\n"))
	}
}
