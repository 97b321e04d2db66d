package gateway_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// newGenMeta is the _meta a client on 2026-07-28 sends with each request.
const newGenMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"lines","version":"1"}}`

// lineStdioNew is lineStdio for a client on 2026-07-28, which discovers
// the server instead of initializing, and says who it is in each
// request's _meta.
func lineStdioNew(t *testing.T, r *rig, server string) *lineClient {
	t.Helper()
	c := lineStdioRaw(t, r, server, "")
	require.Contains(t, c.ask(t, `{"jsonrpc":"2.0","id":"discover","method":"server/discover","params":{`+newGenMeta+`}}`), `"2026-07-28"`)
	require.Contains(t, c.ask(t, `{"jsonrpc":"2.0","id":"list","method":"tools/list","params":{`+newGenMeta+`}}`), `"id":"list","result":{`)
	return c
}

// Over stdio, a client on 2026-07-28 is answered by the fast path with
// the very bytes the go-sdk path writes (the server named in the result's
// _meta, the result marked complete), on the server's endpoint and on
// /mcp. A request whose _meta the go-sdk refuses, or that wants the
// server's log messages, is left to it.
func TestStdioFastPathServesTheNewGenerationAsTheSDKPathDoes(t *testing.T) {
	t.Parallel()
	on := fastRig(t, "on", t.TempDir()+"/m")
	off := fastRig(t, "off", t.TempDir()+"/m")
	for _, ep := range []struct{ server, prefix string }{{"demo", ""}, {"", "demo__"}} {
		lOn, lOff := lineStdioNew(t, on, ep.server), lineStdioNew(t, off, ep.server)
		for i, l := range []struct {
			tool, args, meta string
			fast             bool
		}{
			{"echo", `{"text":"héllo"}`, newGenMeta, true},
			{"add", `{"a":2,"b":40}`, newGenMeta, true}, // structured content
			{"fail", `{"message":"no luck"}`, newGenMeta, true},
			{"echo", `{"text":5}`, newGenMeta, true}, // refused by the schema
			{"boom", `{}`, newGenMeta, true},
			{"echo", `{"text":"no _meta"}`, `"_meta":{}`, true}, // the session's generation counts
			{"trace", `{}`, `"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, true},
			{"echo", `{"text":"x"}`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, false},
			{"echo", `{"text":"x"}`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":5}`, false},
			{"say", `{}`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}`, false},
			{"echo", `{"text":"x"}`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}`, false},
			{"tick", `{}`, `"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`, true},
		} {
			req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, 100+i, ep.prefix+l.tool, l.args, l.meta)
			before := gateway.FastServed(on.gw)
			got, want := lOn.ask(t, req), lOff.ask(t, req)
			require.Equal(t, want, got, "%q %s", ep.server, l.tool)
			if l.fast {
				require.EqualValues(t, before+1, gateway.FastServed(on.gw), "%q %s %s: answered by the fast path", ep.server, l.tool, l.meta)
			} else {
				require.Equal(t, before, gateway.FastServed(on.gw), "%q %s %s: left to the go-sdk path", ep.server, l.tool, l.meta)
			}
		}
	}
	require.Zero(t, gateway.FastServed(off.gw))
}

// A go-sdk client on 2026-07-28 over stdio, its call of a tool whose
// server asks it something during the call: the fast path takes the
// call, the question reaches the client as an input request, and its
// call again with the answer is served as with the fast path off, to the
// same result.
func TestStdioFastPathNewGenerationQuestion(t *testing.T) {
	t.Parallel()
	var got []string
	for _, setting := range []string{"on", "off"} {
		r := fastRig(t, setting, t.TempDir()+"/m")
		var a askingClient
		cs := a.connect(t, r.stdio(t, "demo"), map[string]any{"username": "ada"})
		require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
		require.Contains(t, toolNames(t, cs), "confirm")
		got = append(got, outcome(t, cs, "confirm", map[string]any{}))
		elicited, _ := a.asked()
		require.Len(t, elicited, 1, setting)
		require.Equal(t, "Sure?", elicited[0].Message)
		// The session goes on: a plain call after it.
		got = append(got, outcome(t, cs, "echo", map[string]any{"text": "after"}))
		if setting == "on" {
			require.EqualValues(t, 2, gateway.FastServed(r.gw), "the question's call and the next took the fast path")
		} else {
			require.Zero(t, gateway.FastServed(r.gw))
		}
	}
	require.Contains(t, got[0], `action=accept content=map[username:ada]`)
	require.Equal(t, got[2:], got[:2], "answered alike with the fast path off")
}

// A call of a go-sdk client on 2026-07-28 over stdio that the client
// cancels is cancelled upstream, and the client hears what it hears with
// the fast path off; the session goes on.
func TestStdioFastPathNewGenerationCancellation(t *testing.T) {
	t.Parallel()
	var errs []string
	for _, setting := range []string{"on", "off"} {
		mark := t.TempDir() + "/block"
		r := fastRig(t, setting, mark)
		cs := connectOn(t, r.stdio(t, "demo"), nil, "2026-07-28")
		require.True(t, slices.Contains(toolNames(t, cs), "block"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
			done <- err
		}()
		pollUntil(t, 10*time.Second, "the server has the call", func() bool { return exists(mark + ".started") })
		cancel()
		pollUntil(t, 10*time.Second, "the server's request cancelled", func() bool { return exists(mark + ".cancelled") })
		var err error
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("the cancelled call did not return")
		}
		require.Error(t, err)
		errs = append(errs, err.Error())
		require.Equal(t, "on", text(call(t, cs, "echo", map[string]any{"text": "on"})))
		if setting == "on" {
			pollUntil(t, 10*time.Second, "both calls answered by the fast path", func() bool { return gateway.FastServed(r.gw) == 2 })
		} else {
			require.Zero(t, gateway.FastServed(r.gw))
		}
	}
	require.Equal(t, errs[1], errs[0])
}

// Over stdio, the input requests a 2026-07-28 client gets when the
// server asks during a fast call, and the result of its call again with
// the answer (served by the go-sdk path), are the very bytes the go-sdk
// path writes, but for the request state (random).
func TestStdioFastPathNewGenerationQuestionAsTheSDKPathWritesIt(t *testing.T) {
	t.Parallel()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}},"io.modelcontextprotocol/clientInfo":{"name":"lines","version":"1"}}`
	stateOf := regexp.MustCompile(`"requestState":"([^"]*)"`)
	var got []string
	for _, setting := range []string{"on", "off"} {
		r := fastRig(t, setting, t.TempDir()+"/m")
		c := lineStdioNew(t, r, "demo")
		asked := c.ask(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm","arguments":{},`+meta+`}}`)
		state := stateOf.FindStringSubmatch(asked)
		require.Len(t, state, 2, "input requests: %s", asked)
		require.Contains(t, asked, `"resultType":"input_required"`)
		answered := c.ask(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"confirm","arguments":{},"requestState":"`+state[1]+
			`","inputResponses":{"1":{"action":"accept","content":{"username":"bo"}}},`+meta+`}}`)
		require.Contains(t, answered, `action=accept content=map[username:bo]`)
		got = append(got, stateOf.ReplaceAllString(asked, `"requestState":"…"`), answered)
		want := map[string]int64{"on": 1, "off": 0}[setting] // the first request's; the answer is the go-sdk path's
		require.Equal(t, want, gateway.FastServed(r.gw), setting)
	}
	require.Equal(t, got[2:], got[:2])
}
