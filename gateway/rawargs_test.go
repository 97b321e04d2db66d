package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// rawArgsSchema is the rawargs server's tool's input schema: nested, so
// that the general validator runs, and with an integer.
var rawArgsSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"text": map[string]any{"type": "string"},
		"n":    map[string]any{"type": "integer"},
		"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
		"meta": map[string]any{"type": "object"},
	},
	"required": []any{"text"},
}

// A call's arguments reach the server byte for byte as the client sent
// them, once validated: key order, number spelling and escapes included,
// never decoded to a map and encoded again on the way.
func TestCallArgumentsForwardedAsSent(t *testing.T) {
	r := newRig(t, map[string]manager.Spec{"raw": selfServer(t, "rawargs", nil)}, gateway.HTTPOptions{})
	r.wait("raw")
	for _, tc := range []struct {
		name string
		tr   mcp.Transport
		tool string
	}{
		{"http", r.streamable("/servers/raw/mcp"), "echo_raw"},
		{"everything over stdio", r.stdio(t, ""), "raw__echo_raw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := connect(t, tc.tr, nil)
			for _, args := range []string{
				`{"text":"x","n":5.0,"tags":["b","a"],"meta":{"z":1,"a":null,"big":12345678901234567890}}`,
				`{"n":1e1,"text":"\u00e9 <&> \"q\""}`,
			} {
				res := call(t, cs, tc.tool, json.RawMessage(args))
				require.False(t, res.IsError, text(res))
				require.Equal(t, args, text(res), "the server got other bytes than the client sent")
			}
			// Invalid arguments are still refused before the server.
			res := call(t, cs, tc.tool, json.RawMessage(`{"n":"five"}`))
			require.True(t, res.IsError)
			require.Contains(t, text(res), string(manager.CodeInvalidArguments))
		})
	}
}
