package gateway_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

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
				heard[setting] = append(heard[setting], c.untilAnswer(t, "notifications/progress"))
			}
			clients := []*lineClient{lineStdioNew(t, r, ep.server), lineStdioNew(t, r, ep.server)}
			for i, label := range []string{"first", "second"} {
				clients[i].send(t, newGenTick(i, ep.prefix, `"same"`, label, true))
			}
			for i := range clients {
				heard[setting] = append(heard[setting], clients[i].untilAnswer(t, "notifications/progress"))
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

// A 2026-07-28 client's call over stdio that wants progress and whose
// server asks it something: the fast path takes it, and the client reads
// the lines the go-sdk path writes, but for the request state (random):
// the input requests, then, on its call again with the answer, the
// result; the progress the server reported before asking (on either path
// it may come just after the input requests: it travels apart from the
// question) and after, in order, the last before the result.
func TestStdioFastPathNewGenerationProgressAroundAQuestion(t *testing.T) {
	t.Parallel()
	const meta = `"_meta":{"progressToken":"pq","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}}`
	stateOf := regexp.MustCompile(`"requestState":"([^"]*)"`)
	heard := map[string][]string{}
	for _, setting := range []string{"on", "off"} {
		r := fastRig(t, setting, t.TempDir()+"/m")
		c := lineStdioNew(t, r, "demo")
		c.send(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tickconfirm","arguments":{},`+meta+`}}`)
		asked := c.untilAnswer(t, "notifications/progress")
		state := stateOf.FindStringSubmatch(asked[len(asked)-1])
		require.Len(t, state, 2, "input requests: %q", asked)
		c.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tickconfirm","arguments":{},"requestState":"`+state[1]+
			`","inputResponses":{"1":{"action":"accept","content":{}}},`+meta+`}}`)
		answered := c.untilAnswer(t, "notifications/progress")
		var progress, answers []string
		for _, l := range append(asked, answered...) {
			if strings.Contains(l, `"notifications/progress"`) {
				progress = append(progress, l)
			} else {
				answers = append(answers, stateOf.ReplaceAllString(l, `"requestState":"…"`))
			}
		}
		require.Contains(t, answered[len(answered)-2], `"message":"answered"`, "%s: the last progress before the result", setting)
		heard[setting] = append(progress, answers...)
		want := map[string]int64{"on": 1, "off": 0}[setting] // the first request's; the answer is the go-sdk path's
		require.Equal(t, want, gateway.FastServed(r.gw), setting)
	}
	require.Len(t, heard["off"], 4, "two progress reports, the input requests, the result: %q", heard["off"])
	require.Contains(t, heard["off"][0], `"message":"asking"`)
	require.Contains(t, heard["off"][1], `"message":"answered"`)
	require.Contains(t, heard["off"][2], `"resultType":"input_required"`)
	require.Contains(t, heard["off"][3], `action=accept`)
	require.Equal(t, heard["off"], heard["on"])
}
