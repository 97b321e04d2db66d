package gateway_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/interop"
	"github.com/mcpvisor/mcpvisor/manager"
)

// tsOutcome is what tsclient.mjs prints.
type tsOutcome struct {
	Error  string
	Server struct{ Name string }
	Tools  []string
	Calls  []struct {
		Result struct {
			Content []struct{ Type, Text string }
			IsError bool
		}
		Progress []struct{ Progress, Total float64 } // as the SDK handed it to the call
		Wire     []struct{ Progress, Total float64 } // as it came, before the response
	}
}

// runTSClient runs the TypeScript SDK's client against url.
func runTSClient(t *testing.T, argv []string, url, transport string, calls []map[string]any) tsOutcome {
	t.Helper()
	plan, err := json.Marshal(calls)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], url, transport, string(plan))...)
	out, err := cmd.Output()
	var o tsOutcome
	require.NoError(t, json.Unmarshal(out, &o), "tsclient output %q (exit: %v)", out, err)
	require.Empty(t, o.Error, "the TypeScript client failed")
	require.NoError(t, err)
	return o
}

// The TypeScript SDK's client, over streamable HTTP and SSE: it lists the
// gateway's tools, calls them, receives progress under its own token, and
// on a server's endpoint sees and calls names no other client accepts.
func TestTypeScriptClient(t *testing.T) {
	t.Parallel()
	argv := interop.TSClient(t)
	r := newRig(t, map[string]manager.Spec{
		"demo":       selfServer(t, "demo", nil),
		"odd":        selfServer(t, "badnames", nil),
		"everything": everythingSpec(t),
	}, gateway.HTTPOptions{})
	r.wait("demo")
	r.wait("odd")
	r.wait("everything")
	for _, tt := range []struct{ path, transport string }{{"/mcp", "streamable"}, {"/sse", "sse"}} {
		t.Run(tt.transport, func(t *testing.T) {
			o := runTSClient(t, argv, r.base+tt.path, tt.transport, []map[string]any{
				{"name": "demo__echo", "arguments": map[string]any{"text": "from ts"}},
				{"name": "everything__trigger-long-running-operation", "arguments": map[string]any{"duration": 0.3, "steps": 3}, "progress": true},
				{"name": "odd__dotted_name"},
			})
			assert.Equal(t, "mcpvisor", o.Server.Name)
			assert.Contains(t, o.Tools, "demo__echo")
			assert.Contains(t, o.Tools, "everything__echo")
			for _, name := range o.Tools {
				assert.Regexp(t, validName, name)
			}
			require.Len(t, o.Calls, 3)
			assert.Equal(t, "from ts", o.Calls[0].Result.Content[0].Text)
			assert.False(t, o.Calls[1].Result.IsError)
			require.Len(t, o.Calls[1].Wire, 3, "every progress notification, before the result")
			for i, p := range o.Calls[1].Wire {
				assert.Equal(t, float64(i+1), p.Progress)
				assert.Equal(t, 3.0, p.Total)
			}
			if tt.transport == "sse" {
				// The SDK's SSE client drops progress that comes in the
				// same read as the result: what it hands on is a prefix.
				assert.Equal(t, o.Calls[1].Wire[:len(o.Calls[1].Progress)], o.Calls[1].Progress)
			} else {
				assert.Equal(t, o.Calls[1].Wire, o.Calls[1].Progress)
			}
			assert.Equal(t, "I am dotted.name", o.Calls[2].Result.Content[0].Text)
		})
	}
	t.Run("own names", func(t *testing.T) {
		o := runTSClient(t, argv, r.base+"/servers/odd/mcp", "streamable", []map[string]any{{"name": "path/to/tool"}})
		assert.ElementsMatch(t, badNames, o.Tools)
		assert.Equal(t, "badnames", o.Server.Name)
		assert.Equal(t, "I am path/to/tool", o.Calls[0].Result.Content[0].Text)
	})
}
