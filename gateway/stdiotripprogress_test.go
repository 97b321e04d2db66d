package gateway_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// A call of a client on 2026-07-28 over stdio that wants progress is
// answered by the fast path, with the lines the go-sdk path writes: the
// server's progress under the client's token (a string or a number), in
// order, then the answer, byte for byte; two clients that chose the same
// token each get only their own.
func TestStdioFastPathNewGenerationProgress(t *testing.T) {
	t.Parallel()
	heard := map[string][][]string{}
	for _, setting := range []string{"on", "off"} {
		r := fastRig(t, setting, t.TempDir()+"/m")
		for _, ep := range []struct{ server, prefix string }{{"demo", ""}, {"", "demo__"}} {
			before := gateway.FastServed(r.gw)
			c := lineStdioNew(t, r, ep.server)
			for i, token := range []string{`"p"`, `7`} {
				c.send(t, newGenTick(i, ep.prefix, token, "alone", false))
				heard[setting] = append(heard[setting], c.rawUntilAnswer(t))
			}
			clients := []*lineClient{lineStdioNew(t, r, ep.server), lineStdioNew(t, r, ep.server)}
			for i, label := range []string{"first", "second"} {
				clients[i].send(t, newGenTick(i, ep.prefix, `"same"`, label, true))
			}
			for i := range clients {
				heard[setting] = append(heard[setting], clients[i].rawUntilAnswer(t))
			}
			served := gateway.FastServed(r.gw) - before
			if setting == "on" {
				require.EqualValues(t, 4, served, "%q: the fast path answered", ep.server)
			} else {
				require.Zero(t, served)
			}
		}
	}
	for i, lines := range heard["off"] {
		require.Len(t, lines, 4, "the go-sdk path: three reports, then the answer: %q", lines)
		for _, l := range lines[:3] {
			require.Contains(t, l, `"method":"notifications/progress"`)
		}
		require.Equal(t, lines, heard["on"][i], "the fast path writes what the go-sdk path writes")
	}
	require.Contains(t, heard["off"][0][0], `"progressToken":"p"`)
	require.Contains(t, heard["off"][1][0], `"progressToken":7`)
	require.Contains(t, heard["off"][2][0], `"message":"first"`)
	require.Contains(t, heard["off"][3][0], `"message":"second"`)
}

// newGenTick is tickCall for a client on 2026-07-28, its id n.
func newGenTick(n int, prefix, token, label string, meet bool) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%stick","arguments":{"label":%q,"meet":%v},`+
		`"_meta":{"progressToken":%s,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		n, prefix, label, meet, token)
}

// rawUntilAnswer is the lines the gateway writes up to and with the next
// answer, progress included, other notifications left out.
func (c *lineClient) rawUntilAnswer(t *testing.T) []string {
	t.Helper()
	var got []string
	for {
		select {
		case l, ok := <-c.lines:
			require.True(t, ok, "the gateway closed its output")
			progress := strings.Contains(l, `"method":"notifications/progress"`)
			if strings.HasPrefix(l, `{"jsonrpc":"2.0","method":"notifications/`) && !progress {
				continue
			}
			got = append(got, l)
			if !progress {
				return got
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("no answer; so far: %q", got)
		}
	}
}
