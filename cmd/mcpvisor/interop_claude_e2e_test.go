//go:build linux

package main

// Claude Code, the real `claude` of the pinned npm package, using each mode
// of `mcpvisor serve` over stdio and streamable HTTP. Its model is a fake
// on loopback (fakeModel) that decides the calls by a script reading the
// tool results Claude Code hands back, as a model would: so what is tested
// is Claude Code's side of MCP — connecting, listing, offering the tools
// to the model under its own names, calling them, returning their
// results — against mcpvisor's.

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/interop"
)

// claudeModel is the model Claude Code is told to use: one it knows, so
// it asks nothing about it.
const claudeModel = "claude-sonnet-4-5"

// claudeKey is the API key Claude Code sends the fake model.
const claudeKey = "sk-ant-fake-model-on-loopback"

// claudeMode is how the fake model uses one mode: the tools Claude Code
// is to offer it, the calls its script makes, and the tool results and
// final answer that come back.
type claudeMode struct {
	mode string
	// offered are mcpvisor's tools under Claude Code's names
	// (mcp__mcpvisor__NAME) that the model must be offered; hidden are
	// ones it must not be.
	offered, hidden []string
	script          func(results []string) modelTurn
	// results are what each tool result must begin with. Of a result
	// with structured content Claude Code hands the model that content's
	// JSON, not the text beside it.
	results []string
	final   string
}

// sumAnswer ends a conversation with the last tool result in its text.
func sumAnswer(results []string) modelTurn {
	return modelTurn{text: "The answer is " + results[len(results)-1] + "."}
}

var claudeModes = []claudeMode{{
	mode:    "direct",
	offered: []string{"mcp__mcpvisor__demo__add", "mcp__mcpvisor__demo__echo"},
	hidden:  []string{"mcp__mcpvisor__search_tools", "mcp__mcpvisor__run_lua"},
	script: func(results []string) modelTurn {
		if len(results) == 0 {
			return modelTurn{tool: "mcp__mcpvisor__demo__add", input: map[string]any{"a": 2, "b": 3}}
		}
		return sumAnswer(results)
	},
	results: []string{`{"sum":5}`},
	final:   `The answer is {"sum":5}.`,
}, {
	// Finds the tool by what it does, and calls the one the search named.
	mode:    "search",
	offered: []string{"mcp__mcpvisor__search_tools", "mcp__mcpvisor__describe_tools", "mcp__mcpvisor__call_tool"},
	hidden:  []string{"mcp__mcpvisor__demo__add", "mcp__mcpvisor__run_lua"},
	script: func(results []string) modelTurn {
		switch len(results) {
		case 0:
			return modelTurn{tool: "mcp__mcpvisor__search_tools", input: map[string]any{"query": "add two integers", "limit": 3}}
		case 1:
			name, _, _ := strings.Cut(results[0], " ")
			return modelTurn{tool: "mcp__mcpvisor__call_tool", input: map[string]any{"name": name, "arguments": map[string]any{"a": 2, "b": 3}}}
		}
		return sumAnswer(results)
	},
	results: []string{"demo__add (demo): Add two integers.", `{"sum":5}`},
	final:   `The answer is {"sum":5}.`,
}, {
	// Three dependent calls in one round trip.
	mode:    "code",
	offered: []string{"mcp__mcpvisor__run_lua"},
	hidden:  []string{"mcp__mcpvisor__demo__add", "mcp__mcpvisor__search_tools"},
	script: func(results []string) modelTurn {
		if len(results) == 0 {
			return modelTurn{tool: "mcp__mcpvisor__run_lua", input: map[string]any{"code": `local s = tools.demo.add{a = 2, b = 3}.sum
local t = tools.demo.add{a = s, b = 10}.sum
return tools.demo.echo{text = "total " .. t}`}}
		}
		return sumAnswer(results)
	},
	results: []string{"total 15"},
	final:   "The answer is total 15.",
}}

// TestModesToClaudeCode runs `claude -p` once per mode and transport,
// with mcpvisor as its only MCP server: over stdio Claude Code starts
// `mcpvisor serve --mode MODE` itself, over HTTP it reaches the one
// `mcpvisor serve --http --mode MODE` the test runs. Each run must offer
// the model the mode's tools, carry the results that mcpvisor got from
// the demo server back to it, and print the model's final answer; and
// nothing may go anywhere but loopback.
func TestModesToClaudeCode(t *testing.T) {
	claude := interop.ClaudeCode(t)
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.lua")
	writeConfig(t, path, demoDecl("demo"))
	outside := newOutsideWatch(t)

	for _, m := range claudeModes {
		t.Run(m.mode, func(t *testing.T) {
			server := start(t, invocation{dir: dir, args: []string{"serve", "--http", "127.0.0.1:0", "-c", path,
				"--no-watch", "--mode", m.mode, "--log-level", "info"}})
			log := server.stderr.waitFor(t, "the serving log line", 20*time.Second, servingURL.MatchString)
			for _, tr := range []struct {
				name   string
				config map[string]any
			}{
				{"stdio", map[string]any{"type": "stdio", "command": mcpvisorBin,
					"args": []string{"serve", "-c", path, "--no-watch", "--mode", m.mode}}},
				{"http", map[string]any{"type": "http", "url": servingURL.FindStringSubmatch(log)[1] + "/mcp"}},
			} {
				t.Run(tr.name, func(t *testing.T) {
					model := newFakeModel(t, m.offered[0], m.script)
					out := runClaude(t, claude, model.srv.URL, outside.url, tr.config, m.offered)

					var res struct {
						Result  string `json:"result"`
						IsError bool   `json:"is_error"`
					}
					require.NoError(t, json.Unmarshal(out, &res), "claude's output: %s", out)
					assert.False(t, res.IsError, "%s", out)
					assert.Equal(t, m.final, res.Result, "the model's final answer, as claude -p prints it")

					reqs := model.scripted()
					require.Len(t, reqs, len(m.results)+1, "one request per turn of the script; the tools of each request: %q", model.offered())
					for _, r := range reqs {
						assert.Equal(t, claudeModel, r.Model)
						assert.Equal(t, claudeKey, r.APIKey)
						assert.True(t, r.Stream, "Claude Code streams")
						for _, name := range m.offered {
							assert.Contains(t, r.toolNames(), name)
						}
						for _, name := range m.hidden {
							assert.NotContains(t, r.toolNames(), name)
						}
					}
					results := reqs[len(reqs)-1].results()
					require.Len(t, results, len(m.results), "%q", results)
					for i, want := range m.results {
						assert.True(t, strings.HasPrefix(results[i], want), "tool result %d: %q, want it to begin with %q", i, results[i], want)
					}
				})
			}
		})
	}
	assert.Empty(t, outside.seen(), "Claude Code reached for somewhere other than loopback")
}

// runClaude runs `claude -p` with mcpvisor as its one MCP server (config
// as Claude Code's --mcp-config takes one), allowed to call the tools
// allowed, talking to the model at modelURL; anything it would send
// elsewhere goes to the proxy at proxyURL. It returns what claude
// printed (the JSON of --output-format json), once claude and whatever
// it started have exited.
func runClaude(t *testing.T, claude, modelURL, proxyURL string, config map[string]any, allowed []string) []byte {
	t.Helper()
	home := t.TempDir()
	mcpConfig := filepath.Join(home, "mcp.json")
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"mcpvisor": config}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(mcpConfig, b, 0o600))

	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "What is 2 plus 3? Use the tools.",
		"--output-format", "json", "--model", claudeModel, "--max-turns", "6",
		// No built-in tools, hooks, plugins, CLAUDE.md or keychain: the
		// model is offered mcpvisor's tools alone.
		"--bare", "--tools", "",
		"--strict-mcp-config", "--mcp-config", mcpConfig,
		"--allowedTools", strings.Join(allowed, ","))
	cmd.Dir = home
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".state"),
		"ANTHROPIC_BASE_URL=" + modelURL,
		"ANTHROPIC_API_KEY=" + claudeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		// The tools in the request itself, not behind Claude Code's own
		// tool search, so that the model sees what mcpvisor listed.
		"ENABLE_TOOL_SEARCH=false",
		"HTTP_PROXY=" + proxyURL, "HTTPS_PROXY=" + proxyURL, "http_proxy=" + proxyURL, "https_proxy=" + proxyURL,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
	}
	if race, set := os.LookupEnv("GORACE"); set {
		cmd.Env = append(cmd.Env, "GORACE="+race)
	} else {
		cmd.Env = append(cmd.Env, "GORACE=atexit_sleep_ms=20")
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	out, err := cmd.Output()
	// Whatever of claude's group is left (nothing, when all is well) ends
	// with the test.
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	require.NoError(t, err, "claude: stderr:\n%s\nstdout:\n%s", stderr.String(), out)
	ran := time.Since(began)
	waitForOrphans(t, 30*time.Second)
	t.Logf("claude ran %v, its mcpvisor ended %v later", ran.Round(time.Millisecond), (time.Since(began) - ran).Round(time.Millisecond))
	// The stdio mcpvisor's stderr lands in Claude Code's logs.
	_ = filepath.Walk(home, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, err := os.ReadFile(p); err == nil {
				checkNoRace(t, string(b))
			}
		}
		return nil
	})
	return out
}

// outsideWatch is an HTTP proxy on loopback that refuses everything and
// notes where each request was going: a client told to use it shows
// whether it reached for anything beyond loopback.
type outsideWatch struct {
	url   string
	mu    sync.Mutex // guards hosts
	hosts []string
}

func newOutsideWatch(t *testing.T) *outsideWatch {
	w := &outsideWatch{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		w.mu.Lock()
		w.hosts = append(w.hosts, req.Method+" "+req.Host)
		w.mu.Unlock()
		http.Error(rw, "no internet here", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	w.url = srv.URL
	return w
}

// seen is where requests were going, in arrival order.
func (w *outsideWatch) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.hosts...)
}
