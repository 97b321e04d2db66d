package probe_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager/internal/probe"
)

// What a server may answer a probe with, as a JSON body or an event
// stream, and what the probe makes of it.
func TestReadAnswer(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","id":"mcpvisor-probe","result":{"supportedVersions":["2026-07-28"]}}`
	const refused = `{"jsonrpc":"2.0","id":"mcpvisor-probe","error":{"code":-32601,"message":"no"}}`
	const note = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`
	for _, tt := range []struct {
		name, contentType, body string
		want                    string // "" for a result; "rpc" for a -32601 answer; else the error's start
	}{
		{"json result", "application/json", ok, ""},
		{"json error answer", "application/json; charset=utf-8", refused, "rpc"},
		{"json, another id", "application/json", `{"jsonrpc":"2.0","id":1,"result":{}}`, "the answer is not the response"},
		{"json, not JSON", "application/json", `<html>`, "the answer is not JSON-RPC"},
		{"json, no result", "application/json", `{"jsonrpc":"2.0","id":"mcpvisor-probe","result":3}`, "the answer to server/discover has no result"},
		{"stream, after a notification", "text/event-stream", "event: message\ndata: " + note + "\n\nid: 2\ndata: " + ok + "\n\n", ""},
		{"stream, error answer", "text/event-stream", "data: " + refused + "\n\n", "rpc"},
		{"stream, data split over lines", "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":\"mcpvisor-probe\",\"result\":{}}\n\n", ""},
		{"stream, last event unterminated", "text/event-stream", "data: " + ok, ""},
		{"stream ends first", "text/event-stream", "data: " + note + "\n\n: comment\n\n", "the event stream ended without an answer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := probe.ReadAnswer(tt.contentType, strings.NewReader(tt.body))
			switch tt.want {
			case "":
				require.NoError(t, err)
			case "rpc":
				var rpc *jsonrpc.Error
				require.True(t, errors.As(err, &rpc), "%v", err)
				require.EqualValues(t, jsonrpc.CodeMethodNotFound, rpc.Code)
			default:
				require.Error(t, err)
				require.True(t, strings.HasPrefix(err.Error(), tt.want), "%v", err)
			}
		})
	}
}

// FuzzReadAnswer: whatever a server sends back, reading it ends with an
// answer or an error, never a panic.
func FuzzReadAnswer(f *testing.F) {
	f.Add("application/json", `{"jsonrpc":"2.0","id":"mcpvisor-probe","result":{}}`)
	f.Add("text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":\"mcpvisor-probe\",\"error\":{\"code\":-32601}}\n\n")
	f.Add("text/event-stream; charset=x", "data:\n\ndata: \"mcpvisor-probe\"\n\n")
	f.Fuzz(func(t *testing.T, contentType, body string) {
		err := probe.ReadAnswer(contentType, strings.NewReader(body))
		var rpc *jsonrpc.Error
		if err == nil || errors.As(err, &rpc) {
			require.Contains(t, body, `"mcpvisor-probe"`, "only the probe's own answer is one")
		}
	})
}
