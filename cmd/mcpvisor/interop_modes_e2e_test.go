//go:build linux

package main

// The search and code modes of `mcpvisor serve` driven by clients nobody
// here wrote (the MCP Inspector's command-line mode and the TypeScript
// SDK's client), over stdio and streamable HTTP: each finds a tool with
// the meta-tools and calls it as a model would, knowing nothing of
// mcpvisor. (Claude Code, which needs a model to decide its calls, is
// driven by a fake one in interop_claude_e2e_test.go.)

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/interop"
)

// TestModesToClientsNobodyHereWrote runs one `mcpvisor serve --http` per
// mode, which both clients reach over HTTP, and lets each client start
// its own `mcpvisor serve` over stdio: the Inspector asks one thing per
// run, the TypeScript client lists and then makes all its calls in one.
func TestModesToClientsNobodyHereWrote(t *testing.T) {
	inspector := interop.Inspector(t)
	tsclient := interop.TSClient(t)
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.lua")
	writeConfig(t, path, demoDecl("demo"))

	// Each mode: what the client lists, and the calls that find demo__add
	// and add 2 and 3 with it, with what each answers.
	type call struct {
		name      string
		arguments map[string]any
		// inspectorArgs are the same arguments as the Inspector's
		// --tool-arg pairs, which it converts by the listed schema.
		inspectorArgs []string
		want          string // the result's text (see resultText)
	}
	modes := []struct {
		mode  string
		lists []string
		calls []call
	}{
		{"search", []string{"search_tools", "describe_tools", "call_tool", "mcpvisor_status"}, []call{
			{"search_tools", map[string]any{"query": "add"}, []string{"query=add"}, "demo__add (demo)"},
			{"call_tool", map[string]any{"name": "demo__add", "arguments": map[string]any{"a": 2, "b": 3}},
				[]string{"name=demo__add", `arguments={"a": 2, "b": 3}`}, "5"},
		}},
		{"code", []string{"run_lua"}, []call{
			{"run_lua", map[string]any{"code": "return tools.demo.add{a = 2, b = 3}.sum"},
				[]string{"code=return tools.demo.add{a = 2, b = 3}.sum"}, "5"},
		}},
	}
	for _, m := range modes {
		t.Run(m.mode, func(t *testing.T) {
			server := start(t, invocation{dir: dir, args: []string{"serve", "--http", "127.0.0.1:0", "-c", path,
				"--no-watch", "--mode", m.mode, "--log-level", "info"}})
			log := server.stderr.waitFor(t, "the serving log line", 20*time.Second, servingURL.MatchString)
			url := servingURL.FindStringSubmatch(log)[1] + "/mcp"
			stdio := []string{mcpvisorBin, "serve", "-c", path, "--no-watch", "--mode", m.mode}
			argv, err := json.Marshal(stdio)
			require.NoError(t, err)

			for _, tr := range []struct {
				name string
				// inspector is the Inspector's target; ts its
				// arguments before the calls.
				inspector, ts []string
			}{
				{"stdio", stdio, []string{string(argv), "stdio"}},
				{"http", []string{url}, []string{url, "streamable"}},
			} {
				t.Run(tr.name+"/inspector", func(t *testing.T) {
					inspect := func(args ...string) map[string]any {
						t.Helper()
						out := runClient(t, dir, append(append(append([]string{}, inspector...), tr.inspector...), args...)...)
						var res map[string]any
						require.NoError(t, json.Unmarshal(out, &res), "the Inspector's output: %s", out)
						return res
					}
					var names []string
					for _, tool := range inspect("--method", "tools/list")["tools"].([]any) {
						names = append(names, tool.(map[string]any)["name"].(string))
					}
					assert.Equal(t, m.lists, names)
					for _, c := range m.calls {
						res := inspect(append([]string{"--method", "tools/call", "--tool-name", c.name, "--tool-arg"}, c.inspectorArgs...)...)
						assert.Equal(t, c.want, resultText(t, res, c.want), "%s: %v", c.name, res)
					}
				})
				t.Run(tr.name+"/typescript sdk", func(t *testing.T) {
					var plan []map[string]any
					for _, c := range m.calls {
						plan = append(plan, map[string]any{"name": c.name, "arguments": c.arguments})
					}
					calls, err := json.Marshal(plan)
					require.NoError(t, err)
					out := runClient(t, dir, append(append(append([]string{}, tsclient...), tr.ts...), string(calls))...)
					var o struct {
						Error string
						Tools []string
						Calls []struct{ Result map[string]any }
					}
					require.NoError(t, json.Unmarshal(out, &o), "the TypeScript client's output: %s", out)
					require.Empty(t, o.Error)
					assert.Equal(t, m.lists, o.Tools)
					require.Len(t, o.Calls, len(m.calls))
					for i, c := range m.calls {
						assert.Equal(t, c.want, resultText(t, o.Calls[i].Result, c.want), "%s: %v", c.name, o.Calls[i].Result)
					}
				})
			}
		})
	}
}

// resultText is a tool result's text as JSON decoded it, failing the test
// on an error result; of search_tools' lines, the best match's, cut to
// the length of want ("demo__add (demo)" without the description).
func resultText(t *testing.T, res map[string]any, want string) string {
	t.Helper()
	require.NotEqual(t, true, res["isError"], "an error result: %v", res)
	content, _ := res["content"].([]any)
	require.NotEmpty(t, content, "%v", res)
	text := fmt.Sprint(content[0].(map[string]any)["text"])
	if first, _, ok := strings.Cut(text, "\n"); ok && len(first) > len(want) {
		return first[:len(want)]
	}
	return text
}
