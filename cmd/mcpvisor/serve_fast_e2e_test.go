//go:build linux

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// `mcpvisor serve --fast-path on` over stdio: a client on 2025-11-25 and
// one on 2026-07-28 have their calls answered on the fast path (the debug
// log says so), with the results the go-sdk path gives with --fast-path
// off.
func TestServeStdioFastPath(t *testing.T) {
	noLeftovers(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo"))
	calls := []struct {
		tool string
		args any
	}{
		{"demo__echo", map[string]any{"text": "héllo\nworld"}},
		{"demo__add", map[string]any{"a": 2, "b": 40}},
		{"demo__fail", map[string]any{"message": "no luck"}},
		{"demo__echo", map[string]any{"text": 5}},
		{"demo__nope", map[string]any{}},
	}
	outcomes := map[string][]string{}
	for _, mode := range []string{"on", "off"} {
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		for _, version := range []string{"2025-11-25", "2026-07-28"} {
			cmd := command(ctx, t, invocation{dir: dir, args: []string{"serve", "-c", path, "--no-watch", "--fast-path", mode, "--log-level", "debug"}})
			var stderr syncBuffer
			cmd.Stderr = &stderr
			c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			require.NoError(t, err, "connect")
			ownPIDs.Store(cmd.Process.Pid, struct{}{})
			require.Equal(t, version, cs.InitializeResult().ProtocolVersion)
			listedTools(t, ctx, cs, 20*time.Second, "demo's tools", func(n []string) bool { return len(n) > 0 })
			key := mode + " " + version
			for _, call := range calls {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: call.tool, Arguments: call.args})
				require.NoError(t, err, "%s: %s", key, call.tool)
				b, err := json.Marshal(res)
				require.NoError(t, err)
				outcomes[key] = append(outcomes[key], string(b))
			}
			require.NoError(t, cs.Close())
			log := stderr.String()
			checkNoRace(t, log)
			switch {
			case mode == "on":
				require.Contains(t, log, `msg="fast path: served" endpoint=/mcp transport=stdio server=demo tool=echo`, log)
				require.Contains(t, log, `msg="fast path: served" endpoint=/mcp transport=stdio server=demo tool=add`, log)
			default:
				require.NotContains(t, log, `fast path:`, log)
			}
		}
	}
	require.Equal(t, outcomes["off 2025-11-25"], outcomes["on 2025-11-25"])
	require.Equal(t, outcomes["off 2026-07-28"], outcomes["on 2026-07-28"])
}
