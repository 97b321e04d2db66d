//go:build linux

package main

// `mcpvisor serve` driven by MCP clients nobody here wrote, started the
// way a user starts them: the MCP Inspector's command-line mode and the
// TypeScript SDK's client, over stdio.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/interop"
)

// clientTimeout bounds one run of a client: three servers start behind
// mcpvisor, two of them Node programs, on a busy machine.
const clientTimeout = 2 * time.Minute

// luaList is argv as a Lua list of strings.
func luaList(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return "{" + strings.Join(quoted, ", ") + "}"
}

// A client that lists right after connecting sees every tool of every
// server behind `mcpvisor serve`: the demo server, server-everything and
// server-filesystem, each named within 49 characters. The Inspector also
// calls a tool with arguments it converts by the schema it listed, reads
// a resource and gets a prompt, each in a session of its own, right after
// connecting.
func TestServeToClientsNobodyHereWrote(t *testing.T) {
	inspector := interop.Inspector(t)
	tsclient := interop.TSClient(t)
	everything := interop.StdioCommand(t)
	filesystem := interop.FilesystemCommand(t, t.TempDir())
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, fmt.Sprintf(`mcp_add("demo", {command = {%q, "demo-server"}})
mcp_add("everything", {command = %s, env = {GZIP_ALLOWED_DOMAINS = "127.0.0.1"}})
mcp_add("fs", {command = %s})
`, mcpvisorBin, luaList(everything), luaList(filesystem)))
	// A generous wait: the Node servers may take seconds to start on a
	// busy machine, and every one of them is to be in the first list.
	serve := []string{mcpvisorBin, "serve", "-c", path, "--no-watch", "--wait", "90s"}
	var want []string
	for _, tool := range []string{"echo", "add", "sleep", "fail"} {
		want = append(want, "demo__"+tool)
	}
	for _, tool := range interop.BaseTools {
		want = append(want, "everything__"+tool)
	}
	for _, tool := range interop.FilesystemTools {
		want = append(want, "fs__"+tool)
	}
	everyTool := func(t *testing.T, names []string) {
		t.Helper()
		for _, name := range want {
			assert.Contains(t, names, name, "the first tools/list")
		}
		for _, name := range names {
			assert.LessOrEqual(t, len(name), 49, name)
		}
	}

	// The rest needs the demo server alone, which starts in milliseconds
	// (seconds on a loaded machine with the race detector: the wait ends
	// when it has started, and the Inspector asks for a prompt by name
	// at once, with no list first).
	demoPath := filepath.Join(dir, "demo.lua")
	writeConfig(t, demoPath, demoDecl("demo"))
	serveDemo := []string{mcpvisorBin, "serve", "-c", demoPath, "--no-watch", "--wait", "90s"}

	inspect := func(t *testing.T, serve []string, args ...string) map[string]any {
		t.Helper()
		out := runClient(t, dir, append(append(append([]string{}, inspector...), serve...), args...)...)
		var res map[string]any
		require.NoError(t, json.Unmarshal(out, &res), "the Inspector's output: %s", out)
		return res
	}
	t.Run("inspector", func(t *testing.T) {
		res := inspect(t, serve, "--method", "tools/list")
		var names []string
		for _, tool := range res["tools"].([]any) {
			names = append(names, tool.(map[string]any)["name"].(string))
		}
		everyTool(t, names)

		res = inspect(t, serveDemo, "--method", "tools/call", "--tool-name", "demo__add", "--tool-arg", "a=2", "b=3")
		assert.Equal(t, map[string]any{"sum": 5.0}, res["structuredContent"], "%v", res)

		res = inspect(t, serveDemo, "--method", "resources/read", "--uri", "demo://readme")
		contents, _ := res["contents"].([]any)
		require.Len(t, contents, 1, "%v", res)
		assert.Contains(t, contents[0].(map[string]any)["text"], "demo")

		res = inspect(t, serveDemo, "--method", "prompts/get", "--prompt-name", "demo__greet", "--prompt-args", "name=Ann")
		assert.Equal(t, "Greet Ann", res["description"], "%v", res)
	})
	t.Run("typescript sdk", func(t *testing.T) {
		argv, err := json.Marshal(serve)
		require.NoError(t, err)
		plan := `[{"name": "demo__echo", "arguments": {"text": "from ts"}}, {"name": "fs__list_allowed_directories"}]`
		out := runClient(t, dir, append(tsclient, string(argv), "stdio", plan)...)
		var o struct {
			Error string
			Tools []string
			Calls []struct {
				Result struct {
					Content []struct{ Text string }
					IsError bool
				}
			}
		}
		require.NoError(t, json.Unmarshal(out, &o), "the TypeScript client's output: %s", out)
		require.Empty(t, o.Error)
		everyTool(t, o.Tools)
		require.Len(t, o.Calls, 2)
		assert.Equal(t, "from ts", o.Calls[0].Result.Content[0].Text)
		assert.False(t, o.Calls[1].Result.IsError, "%v", o.Calls[1].Result.Content)
	})
}

// runClient runs a client program to its end and returns its stdout; the
// `mcpvisor serve` it started is waited for too (a client need not wait
// for its server to exit).
func runClient(t *testing.T, dir string, argv ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = binaryEnv()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	out, err := cmd.Output()
	defer func() { checkNoRace(t, stderr.String()) }()
	require.NoError(t, err, "%s: stderr:\n%s", filepath.Base(argv[1]), stderr.String())
	ran := time.Since(began)
	waitForOrphans(t, 30*time.Second)
	t.Logf("%s ran %v, its mcpvisor ended %v later", filepath.Base(argv[1]), ran.Round(time.Millisecond), (time.Since(began) - ran).Round(time.Millisecond))
	return out
}

// waitForOrphans waits until no process the test did not start itself is
// left among its children: the mcpvisor a client started, reparented here
// when the client exited first, and its servers, finishing their stop.
func waitForOrphans(t *testing.T, wait time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		running := 0
		for pid, state := range childrenOf(os.Getpid()) {
			if state == 'Z' {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
			} else if !ours(pid) {
				running++
			}
		}
		return running == 0
	}, wait, 20*time.Millisecond, "the mcpvisor a client started, or its servers, still run after the client exited")
}
