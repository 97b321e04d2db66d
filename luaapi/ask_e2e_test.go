package luaapi_test

// What servers ask, end to end through the real manager: an in-memory
// server asks its client (the manager) for a form, a completion and its
// roots from inside a tool call, and the Lua handlers answer.
//
// This needs the manager to declare the answerer's offers as client
// capabilities and to route requests to it (manager/ask); until it does,
// the server is told that its client supports none of them and these
// tests fail saying so.

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// askingServer has one tool per request kind; each asks the client and
// returns its answer as JSON text. Every notifications/roots/list_changed
// it gets is reported on rootsChanged.
func askingServer(rootsChanged chan<- struct{}) func() *mcp.Server {
	return func() *mcp.Server {
		s := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, &mcp.ServerOptions{
			RootsListChangedHandler: func(context.Context, *mcp.RootsListChangedRequest) {
				select {
				case rootsChanged <- struct{}{}:
				default:
				}
			},
		})
		// Each tool asks in the multi-round-trip style, which every client
		// gets (the SDK sends it as a request of its own to a client on an
		// older protocol): the first call returns the request, the retry
		// carries the client's answer, returned as JSON text.
		asking := func(q mcp.InputRequest) mcp.ToolHandler {
			return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				answer, ok := req.Params.InputResponses["q"]
				if !ok {
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": q}}, nil
				}
				b, _ := json.Marshal(answer)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
			}
		}
		empty := map[string]any{"type": "object"}
		s.AddTool(&mcp.Tool{Name: "elicit", InputSchema: empty}, asking(nameForm()))
		s.AddTool(&mcp.Tool{Name: "sample", InputSchema: empty}, asking(&mcp.CreateMessageParams{MaxTokens: 10,
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "6*7?"}}}}))
		s.AddTool(&mcp.Tool{Name: "roots", InputSchema: empty}, asking(&mcp.ListRootsParams{}))
		return s
	}
}

func TestServersAskThroughTheManager(t *testing.T) {
	rootsChanged := make(chan struct{}, 16)
	r := newTestRuntime(t, inMemoryDial(t, askingServer(rootsChanged)))
	r.run(t, `
		mcp_handle("elicitation", function(req, server)
			return {action = "accept", content = {name = server .. ": " .. req.message}}
		end)
		mcp_handle("sampling", function(req) return "42 (" .. req.messages[1].content.text .. ")" end)
		mcp_roots{{uri = "file:///srv/work", name = "work"}}
		mcp_add("asker", {command = {"asker"}})
		assert(mcp_wait("asker", "connected"))`)
	call := func(t *testing.T, tool string) string {
		t.Helper()
		vals := r.run(t, `local res, err = mcp_call("asker.`+tool+`", {})
			if not res then return "error: " .. tostring(err) end
			return res.text, tostring(res.is_error)`)
		require.Equal(t, "false", vals[len(vals)-1], "%s: the server's request was not answered (is the manager routing it to the answerer?): %s", tool, vals[0])
		return vals[0]
	}
	t.Run("elicitation", func(t *testing.T) {
		require.JSONEq(t, `{"action":"accept","content":{"name":"asker: Who are you?"}}`, call(t, "elicit"))
	})
	t.Run("sampling", func(t *testing.T) {
		res := call(t, "sample")
		require.Contains(t, res, `"text":"42 (6*7?)"`)
		require.Contains(t, res, `"model":"mcpvisor-lua"`)
	})
	// The roots set before the server connected: on this protocol the
	// server's input request is answered from the SDK client's own list,
	// which the manager must fill when the session starts.
	t.Run("roots", func(t *testing.T) {
		require.JSONEq(t, `{"roots":[{"uri":"file:///srv/work","name":"work"}]}`, call(t, "roots"))
	})
	// New roots: the connected server is told, asks again, gets them. (The
	// SDK announces a withdrawal and an addition apart: the server may
	// first see the list between the two.)
	t.Run("roots changed", func(t *testing.T) {
		r.run(t, `mcp_roots{"file:///srv/other"}`)
		select {
		case <-rootsChanged:
		case <-time.After(10 * time.Second):
			t.Fatal("the server was not told that the roots changed (Manager.RootsChanged)")
		}
		require.Eventually(t, func() bool {
			return call(t, "roots") == `{"roots":[{"uri":"file:///srv/other"}]}`
		}, 10*time.Second, 10*time.Millisecond, "the new roots: %s", call(t, "roots"))
	})
}
