package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A server's result that has a _meta or a resultType of its own reaches a
// 2026-07-28 client as the go-sdk path sends it: its _meta kept, the
// gateway's server named in it unless the server named one, and the
// result marked complete.
func TestTripShapeKeepsTheServersMeta(t *testing.T) {
	sh := tripShape{info: json.RawMessage(`{"name":"gw","version":"1"}`), complete: true}
	for _, c := range []struct{ res, want string }{
		{`{"content":[]}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"gw","version":"1"}},"content":[],"resultType":"complete"}`},
		{`{}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"gw","version":"1"}},"resultType":"complete"}`},
		{`{"_meta":{"k":1},"content":[]}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"gw","version":"1"},"k":1},"content":[],"resultType":"complete"}`},
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"content":[]}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}},"content":[],"resultType":"complete"}`},
		{`{"content":[],"resultType":"something"}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"gw","version":"1"}},"content":[],"resultType":"complete"}`},
	} {
		line := sh.raw(json.RawMessage(`7`), json.RawMessage(c.res))
		var got struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal(line, &got), "%s", line)
		require.Equal(t, 7, got.ID)
		require.JSONEq(t, c.want, string(got.Result), c.res)
	}
	require.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`+"\n", string(tripShape{}.raw(json.RawMessage(`1`), json.RawMessage(`{"content":[]}`))),
		"a call of the older generation: the server's bytes")
}
