package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// connectNamed is connectOn for a client that gives its name as name.
func connectNamed(t *testing.T, transport mcp.Transport, name string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).
		Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: fastProtocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// toolsByDescription is the names cs is offered, by the tools'
// descriptions.
func toolsByDescription(t *testing.T, cs *mcp.ClientSession) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := map[string]string{}
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err, "tools/list")
		out[tool.Description] = tool.Name
	}
	return out
}

// Calls on a toolset's endpoint, and calls of a client given a name
// budget of its own (its tools offered under shortened names), are
// answered by the fast path, over HTTP and over stdio, with what the
// go-sdk path answers with the fast path off: each name reaches the tool
// the client was offered under it.
func TestFastPathServesToolsetsAndClientsWithNamesOfTheirOwn(t *testing.T) {
	t.Parallel()
	const server = "demonstration_server" // its tools' names on /mcp are longer than the client's budget
	outcomes := map[string][]string{}
	for _, setting := range []string{"on", "off"} {
		spec := selfServer(t, "fastpath", map[string]string{markEnv: t.TempDir() + "/m"})
		r := newRigWith(t, map[string]manager.Spec{server: spec}, gateway.Options{FastPath: setting}, gateway.HTTPOptions{})
		r.wait(server)
		r.gw.SetToolsets(map[string]gateway.Toolset{"echoes": {Include: []string{server + ".echo", server + ".add"}}})
		require.Contains(t, r.gw.Toolsets(), "echoes") // applied, its endpoint served
		r.gw.SetClientBudgets([]gateway.ClientBudget{{Client: "narrow", Budget: gateway.MinNameBudget}})
		before := gateway.FastServed(r.gw)
		var got []string

		set := connectOn(t, r.streamable("/toolsets/echoes/mcp"), nil, fastProtocol)
		require.ElementsMatch(t, []string{server + "__echo", server + "__add"}, toolNames(t, set))
		got = append(got, outcome(t, set, server+"__echo", map[string]any{"text": "from a toolset"}))

		lines := lineStdio(t, r, "", "echoes", fastProtocol)
		got = append(got, lines.ask(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+server+`__add","arguments":{"a":2,"b":3}}}`))

		plain := toolsByDescription(t, connectOn(t, r.streamable("/mcp"), nil, fastProtocol))
		for _, transport := range []mcp.Transport{r.streamable("/mcp"), r.stdio(t, "")} {
			narrow := connectNamed(t, transport, "narrow")
			theirs := toolsByDescription(t, narrow)
			for _, c := range []struct {
				tool string
				args map[string]any
			}{{"echo", map[string]any{"text": "narrow"}}, {"add", map[string]any{"a": 1, "b": 1}}} {
				tool := c.tool
				var desc string
				for d, name := range plain {
					if name == server+"__"+tool {
						desc = d
					}
				}
				name := theirs[desc]
				require.NotEmpty(t, name, "the narrow client is offered %s", tool)
				require.NotEqual(t, server+"__"+tool, name, "shortened for the narrow client")
				require.LessOrEqual(t, len(name), gateway.MinNameBudget)
				got = append(got, tool+": "+outcome(t, narrow, name, c.args))
			}
		}
		outcomes[setting] = got

		served := gateway.FastServed(r.gw) - before
		if setting == "on" {
			require.EqualValues(t, 6, served, "the fast path answered")
		} else {
			require.Zero(t, served)
		}
	}
	require.Contains(t, outcomes["off"][0], "from a toolset")
	require.Contains(t, outcomes["off"][1], `"text":"5"`)
	require.Contains(t, outcomes["off"], `echo: {"content":[{"type":"text","text":"narrow"}]}`)
	require.Contains(t, outcomes["off"], `add: {"content":[{"type":"text","text":"2"}],"structuredContent":{"sum":2}}`)
	require.Equal(t, outcomes["off"], outcomes["on"], "answered alike with the fast path off")
}
