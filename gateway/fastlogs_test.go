package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// featuresRigWith is featuresRig with the fast path as setting says.
func featuresRigWith(t *testing.T, setting string) *rig {
	t.Helper()
	r := newRigWith(t, map[string]manager.Spec{
		"feat": selfServer(t, "features", nil),
		"demo": selfServer(t, "demo", nil),
	}, gateway.Options{FastPath: setting}, gateway.HTTPOptions{})
	r.gw.SetToolsets(map[string]gateway.Toolset{"feats": {Include: []string{"feat.*"}}})
	r.wait("feat")
	r.wait("demo")
	return r
}

// streamData is the data of each event of an event-stream response body,
// as sent.
func streamData(body string) []string {
	var out []string
	for line := range strings.Lines(body) {
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			out = append(out, data)
		}
	}
	if out == nil { // a JSON answer
		out = append(out, strings.TrimSpace(body))
	}
	return out
}

// A client that set a logging level has its calls answered by the fast
// path, and hears on the call's response, before the result, the very
// messages the go-sdk path sends it with the fast path off: those the
// server logged during the call at or above the client's level, byte for
// byte, in order; above them, none.
func TestFastPathRelaysLogsAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	rigs := map[string]*rig{"on": featuresRigWith(t, "on"), "off": featuresRigWith(t, "off")}
	for _, tc := range []struct{ path, tool string }{
		{"/mcp", "feat__chatty"},
		{"/servers/feat/mcp", "chatty"},
		{"/toolsets/feats/mcp", "feat__chatty"},
	} {
		heard := map[string][][]string{}
		for setting, r := range rigs {
			before := gateway.FastServed(r.gw)
			session := fastSession(t, r, tc.path)
			for _, level := range []string{"info", "debug", "error"} {
				code, body, _ := post(t, r.base+tc.path, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"`+level+`"}}`, session)
				require.Equal(t, http.StatusOK, code, body)
				code, body, _ = post(t, r.base+tc.path, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"`+tc.tool+`","arguments":{}}}`, session)
				require.Equal(t, http.StatusOK, code, body)
				heard[setting] = append(heard[setting], streamData(body))
			}
			served := gateway.FastServed(r.gw) - before
			if setting == "on" {
				require.EqualValues(t, 3, served, "%s: the fast path answered", tc.path)
			} else {
				require.Zero(t, served)
			}
		}
		logged := func(level, data string) string {
			return `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + data + `","level":"` + level + `","logger":"feat"}}`
		}
		result := `{"jsonrpc":"2.0","id":"c","result":{"content":[{"type":"text","text":"done"}]}}`
		require.Equal(t, [][]string{
			{logged("info", "starting"), logged("info", "working"), logged("info", "finishing"), result},
			// The server is asked for debug, and has answered, before the call.
			{logged("debug", "details"), logged("info", "starting"), logged("info", "working"), logged("info", "finishing"), result},
			{result},
		}, heard["off"], "%s: the go-sdk path", tc.path)
		require.Equal(t, heard["off"], heard["on"], "%s: the fast path sends what the go-sdk path sends", tc.path)
	}
}

// Over stdio as well, a client that set a logging level has its calls
// answered by the fast path, with the lines the go-sdk path writes: the
// server's log messages at or above the client's level, then the answer.
func TestStdioFastPathRelaysLogsAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	rigs := map[string]*rig{"on": featuresRigWith(t, "on"), "off": featuresRigWith(t, "off")}
	for _, ep := range []struct{ server, prefix string }{{"feat", ""}, {"", "feat__"}} {
		heard := map[string][][]string{}
		for setting, r := range rigs {
			before := gateway.FastServed(r.gw)
			c := lineStdio(t, r, ep.server, "", fastProtocol)
			for i, level := range []string{"info", "debug", "error"} {
				require.Contains(t, c.ask(t, `{"jsonrpc":"2.0","id":"lvl","method":"logging/setLevel","params":{"level":"`+level+`"}}`), `"id":"lvl","result":{}`)
				c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%schatty","arguments":{}}}`, i, ep.prefix))
				heard[setting] = append(heard[setting], c.untilAnswer(t, "notifications/message"))
			}
			served := gateway.FastServed(r.gw) - before
			if setting == "on" {
				require.EqualValues(t, 3, served, "%q: the fast path answered", ep.server)
			} else {
				require.Zero(t, served)
			}
		}
		logged := func(level, data string) string {
			return `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + data + `","level":"` + level + `","logger":"feat"}}`
		}
		result := func(id int) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"done"}]}}`, id)
		}
		require.Equal(t, [][]string{
			{logged("info", "starting"), logged("info", "working"), logged("info", "finishing"), result(0)},
			{logged("debug", "details"), logged("info", "starting"), logged("info", "working"), logged("info", "finishing"), result(1)},
			{result(2)},
		}, heard["off"], "%q: the go-sdk path", ep.server)
		require.Equal(t, heard["off"], heard["on"], "%q: the fast path writes what the go-sdk path writes", ep.server)
	}
}
