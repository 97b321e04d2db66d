package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A go-sdk client on 2026-07-28 over streamable HTTP, which has no
// session, has its calls answered by the fast path, as the go-sdk path
// answers them: plain and structured results, a tool's isError result,
// arguments the schema refuses, a JSON-RPC error from the server; an
// unknown or hidden tool, or arguments that are no object, are left to
// the go-sdk path.
func TestSessionlessFastPathAnswersAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	on := fastRig(t, "on", t.TempDir()+"/m")
	off := fastRig(t, "off", t.TempDir()+"/m")
	requireAnsweredAlikeOn(t, on, off, []fastCall{
		{"echo", map[string]any{"text": "héllo\nworld"}, true},
		{"add", map[string]any{"a": 2, "b": 40}, true},
		{"fail", map[string]any{"message": "no luck"}, true},
		{"echo", map[string]any{"text": 5}, true}, // refused by the schema
		{"boom", map[string]any{}, true},
		{"echo", "not an object", false},
		{"nope", map[string]any{}, false},
		{"sleep", map[string]any{"ms": 1}, false}, // hidden
	}, "2026-07-28")
}

// A sessionless call is answered byte for byte as the go-sdk path answers
// it: the status, the headers of its event stream, the event, and the
// result with the server it names and its result type; the client's own
// _meta members and its trace context reach the server alike. Requests
// the go-sdk refuses (headers that disagree with the body, a _meta
// without the client's capabilities) are refused alike, by the go-sdk.
func TestSessionlessFastPathAnswersByteForByte(t *testing.T) {
	t.Parallel()
	on := fastRig(t, "on", t.TempDir()+"/m")
	off := fastRig(t, "off", t.TempDir()+"/m")
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}`
	headers := func(name string) map[string]string {
		return map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": name}
	}
	type request struct {
		name, params string
		header       map[string]string
		fast         bool
	}
	for _, ep := range []struct{ path, prefix string }{{"/servers/demo/mcp", ""}, {"/mcp", "demo__"}} {
		echo, trace := ep.prefix+"echo", ep.prefix+"trace"
		for i, r := range []request{
			{echo, `"arguments":{"text":"héllo <&> \u2028"},"_meta":{` + meta + `}`, headers(echo), true},
			{ep.prefix + "add", `"arguments":{"a":2,"b":40},"_meta":{` + meta + `}`, headers(ep.prefix + "add"), true},
			{ep.prefix + "boom", `"_meta":{` + meta + `}`, headers(ep.prefix + "boom"), true},
			{trace, `"arguments":{},"_meta":{` + meta + `,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","tracestate":"k=v","mine":[1]}`, headers(trace), true},
			{echo, `"arguments":{"text":"x"},"_meta":{` + meta + `}`, headers(ep.prefix + "add"), false},
			{echo, `"arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, headers(echo), false},
			{echo, `"arguments":{"text":"x"}`, headers(echo), false},
			{echo, `"arguments":{"text":"x"},"_meta":{` + meta + `,"progressToken":"p"}`, headers(echo), false},
		} {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,%s}}`, i, r.name, r.params)
			pollUntil(t, 10*time.Second, "both gateways list the tools", func() bool {
				cOn, _, _ := post(t, on.base+ep.path, body, r.header)
				cOff, _, _ := post(t, off.base+ep.path, body, r.header)
				return cOn == cOff
			})
			before := gateway.FastServed(on.gw)
			codeOn, gotOn, hdrOn := post(t, on.base+ep.path, body, r.header)
			codeOff, gotOff, hdrOff := post(t, off.base+ep.path, body, r.header)
			require.Equal(t, codeOff, codeOn, "%s %s", ep.path, body)
			require.Equal(t, gotOff, gotOn, "%s %s", ep.path, body)
			for _, h := range []string{"Content-Type", "Cache-Control", "Connection", "Mcp-Session-Id"} {
				require.Equal(t, hdrOff.Values(h), hdrOn.Values(h), "%s %s: %s", ep.path, body, h)
			}
			if r.fast {
				require.Equal(t, http.StatusOK, codeOn, gotOn)
				require.EqualValues(t, 1, gateway.FastServed(on.gw)-before, "%s %s: answered by the fast path", ep.path, body)
			} else {
				require.Zero(t, gateway.FastServed(on.gw)-before, "%s %s: left to the go-sdk path", ep.path, body)
			}
		}
	}
	require.Zero(t, gateway.FastServed(off.gw), "with the fast path off, none is")
}

// A server that asks its client something during a sessionless fast call
// reaches the client as the go-sdk path's round trip does: the call's
// first request is answered with the question as an input request, and
// the client's answer, brought with the request state, gets the result.
func TestSessionlessFastPathHandsQuestionsToTheRoundTrip(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"on", "off"} {
		t.Run(setting, func(t *testing.T) {
			t.Parallel()
			r := fastRig(t, setting, t.TempDir()+"/m")
			var mu sync.Mutex
			var asked []string
			c := mcp.NewClient(&mcp.Implementation{Name: "asked", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					asked = append(asked, req.Params.Message)
					mu.Unlock()
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, r.streamable("/mcp"), &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = cs.Close() })
			toolNames(t, cs)
			res := call(t, cs, "demo__confirm", map[string]any{})
			require.False(t, res.IsError, text(res))
			require.Equal(t, "action=accept content=map[username:ada]", text(res))
			mu.Lock()
			require.Equal(t, []string{"Sure?"}, asked)
			mu.Unlock()
			b, err := json.Marshal(res)
			require.NoError(t, err)
			require.NotContains(t, string(b), "requestState", "the client got the result, not a question")
			if setting == "on" {
				require.EqualValues(t, 1, gateway.FastServed(r.gw), "the call's first request took the fast path")
			}
		})
	}
}

// sessionlessCall is the body of a 2026-07-28 tools/call of tool with id
// and args, from the client named raw, and its headers.
func sessionlessCall(id, tool, args string) (string, map[string]string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},`+
		`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}`, id, tool, args)
	return body, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool}
}

// A sessionless client that closes the request carrying its fast call
// cancels the call upstream: the request is the whole call. Until then
// the call counts against the client's cap on calls in flight, which
// refuses its next call in the go-sdk path's words.
func TestSessionlessFastPathCancelsWithTheRequestAndKeepsTheCap(t *testing.T) {
	t.Parallel()
	mark := t.TempDir() + "/block"
	spec := selfServer(t, "fastpath", map[string]string{markEnv: mark})
	r := newRigWith(t, map[string]manager.Spec{"demo": spec}, gateway.Options{FastPath: "on", MaxClientCalls: 1}, gateway.HTTPOptions{})
	r.wait("demo")
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		body, header := sessionlessCall("c-7", "block", "{}")
		_, _, _ = postCtx(ctx, r.base+"/servers/demo/mcp", body, header)
	}()
	pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })

	body, header := sessionlessCall("c-8", "echo", `{"text":"x"}`)
	code, got, _ := post(t, r.base+"/servers/demo/mcp", body, header)
	require.Equal(t, http.StatusOK, code, got)
	require.Contains(t, got, `"isError":true`, "refused at the cap")
	require.Contains(t, got, "requests in flight, the most one client may have", got)

	leave()
	pollUntil(t, 10*time.Second, "the server's request cancelled", func() bool { return exists(mark + ".cancelled") })
	<-answered
	require.EqualValues(t, 1, gateway.FastServed(r.gw), "the call took the fast path; the refused one was left to the go-sdk")
	pollUntil(t, 10*time.Second, "the cap is free again", func() bool {
		code, got, _ := post(t, r.base+"/servers/demo/mcp", body, header)
		return code == http.StatusOK && !strings.Contains(got, `"isError":true`)
	})
}

// A server's question during a sessionless fast call goes back as an
// input request; a client that never comes back with its answer has the
// call given up after the session timeout, as on the go-sdk path: the
// question ends and the call with it.
func TestSessionlessFastRoundTripLeftExpires(t *testing.T) {
	t.Parallel()
	spec := selfServer(t, "fastpath", map[string]string{markEnv: t.TempDir() + "/m"})
	r := newRigWith(t, map[string]manager.Spec{"demo": spec}, gateway.Options{FastPath: "on"}, gateway.HTTPOptions{SessionTimeout: 300 * time.Millisecond})
	r.wait("demo")
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"leaver","version":"1"}}}}`
	code, got, _ := post(t, r.base+"/servers/demo/mcp", body,
		map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "confirm"})
	require.Equal(t, http.StatusOK, code, got)
	require.Contains(t, got, `"resultType":"input_required"`, got)
	require.Contains(t, got, `"requestState"`, got)
	require.EqualValues(t, 1, gateway.FastServed(r.gw))
	pollUntil(t, 10*time.Second, "the call given up", func() bool {
		for _, e := range r.m.Bus().History(100) {
			if f := e.Format(); strings.Contains(f, "tool_call") && strings.Contains(f, `tool="confirm"`) {
				return true
			}
		}
		return false
	})
}
