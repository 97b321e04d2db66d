package manager_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Tools whose names could hijack a terminal or pass for another tool are
// left out, each with a refused event naming it; the rest of the list is
// kept.
func TestUnusableToolNamesAreRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{newServer: func() *mcp.Server {
			s := mcp.NewServer(&mcp.Implementation{Name: "odd"}, nil)
			for _, name := range []string{"github", "gıthub", "clear\x1b[2J", "zero\u200bwidth", "fine", "a.b"} {
				s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
					func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return &mcp.CallToolResult{}, nil
					})
			}
			return s
		}}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		sub := m.Bus().Subscribe(events.SubscribeOptions{})
		defer sub.Close()
		require.NoError(t, m.Add("odd", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "odd", manager.StateConnected)
		require.NoError(t, err)

		tools, err := m.Tools("odd")
		require.NoError(t, err)
		var names []string
		for _, ti := range tools {
			names = append(names, ti.Name)
		}
		require.Equal(t, []string{"a.b", "fine", "github"}, names)

		synctest.Wait()
		var refused []string
		for {
			e, ok, _ := sub.TryRecv()
			if !ok {
				break
			}
			if e.Kind == events.KindRefused {
				refused = append(refused, e.Text("name")+": "+e.Text("reason"))
			}
		}
		require.ElementsMatch(t, []string{
			`"clear\x1b[2J": its name contains the control or invisible character U+001B`,
			`"g\u0131thub": its name looks like "github", another tool of this server`,
			`"zero\u200bwidth": its name contains the control or invisible character U+200B`,
		}, refused)
	})
}
