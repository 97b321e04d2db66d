package manager_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A tool whose input schema loops without consuming data (the validator
// would recurse until the runtime dies) stays listed as unavailable with
// the reason; calling it is refused before anything is sent, and the
// server's other tools, and the host, carry on.
func TestUnsafeSchemaToolIsListedButNotCalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{newServer: func() *mcp.Server {
			s := demo.NewServer()
			s.AddTool(&mcp.Tool{Name: "loop", InputSchema: map[string]any{"type": "object", "$ref": "#"}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					t.Error("the tool with the looping schema was called")
					return &mcp.CallToolResult{}, nil
				})
			return s
		}}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)

		tools, err := m.Tools("demo")
		require.NoError(t, err)
		var loop manager.ToolInfo
		for _, ti := range tools {
			if ti.Name == "loop" {
				loop = ti
			} else {
				require.True(t, ti.Available, ti.Name)
			}
		}
		require.False(t, loop.Available)
		require.Equal(t, "unusable input schema: reference loop that never consumes data: # → #", loop.Problem)

		_, err = m.Call(context.Background(), "demo.loop", map[string]any{"x": 1}, manager.CallOptions{})
		requireCode(t, err, manager.ErrInvalidArguments, "demo", `tools/call "loop"`)
		require.EqualError(t, err, `server "demo": tools/call "loop": unusable input schema: reference loop that never consumes data: # → #; the call was not sent (the server must fix the tool's schema)`)
		echo(t, m, "demo.echo", "still here")
	})
}
