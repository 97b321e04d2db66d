package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A model can ask what each server is doing, as a resource and as a tool:
// one line per server, saying why it is down and when it is tried again.
// The tool can be left out; the resource is always there, and neither
// waits for servers that are still starting.
func TestStatusSaysWhatEachServerIsDoing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{StatusTool: true, Wait: 5 * time.Second})
		require.NoError(t, b.m.Add("up", newDialer().spec(nil)))
		require.NoError(t, b.m.Add("broken", slowly(0, errors.New("no such program")).spec(nil)))
		require.NoError(t, b.m.Add("off", manager.Spec{Transport: manager.TransportInProcess, Dial: newDialer(), Disabled: true}))
		require.NoError(t, b.m.Add("hung", slowly(time.Hour, nil).spec(nil)))
		c := b.connect("curious")
		synctest.Wait() // up has connected, broken has failed once; hung is still starting

		start := time.Now()
		res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: gateway.StatusTool})
		require.NoError(t, err)
		require.False(t, res.IsError)
		assert.Zero(t, time.Since(start), "the status waited for the servers")
		text := res.Content[0].(*mcp.TextContent).Text
		lines := strings.Split(strings.TrimSpace(text), "\n")
		require.Len(t, lines, 4, text)
		assert.Regexp(t, `^broken: down after 1 failed attempt\. The last error: .*no such program\. It is tried again in [0-9.]+m?s\. Its tools answer with an error until then\.$`, lines[0])
		assert.Equal(t, "hung: starting.", lines[1])
		assert.Equal(t, "off: turned off by the user; it offers nothing until they turn it on.", lines[2])
		assert.Equal(t, "up: connected, offering 4 tools, 1 resource and 1 prompt.", lines[3])
		assert.NotRegexp(t, internals, text)

		read, err := c.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: gateway.StatusURI})
		require.NoError(t, err)
		assert.Equal(t, text, read.Contents[0].Text, "the resource says the same")
		assert.Zero(t, time.Since(start), "the status waited for the servers")
	})
}

func TestStatusToolCanBeLeftOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{})
		c := b.connect("plain")
		assert.NotContains(t, c.tools(t), gateway.StatusTool)
		res, err := c.ListResources(context.Background(), nil)
		require.NoError(t, err)
		require.Len(t, res.Resources, 1)
		assert.Equal(t, gateway.StatusURI, res.Resources[0].URI)
		read, err := c.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: gateway.StatusURI})
		require.NoError(t, err)
		assert.Equal(t, "No MCP servers are declared.", read.Contents[0].Text)
	})
}
