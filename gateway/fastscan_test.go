package gateway

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzFastScan: whatever a client sends, the fast path reads it as
// json.Unmarshal does, or leaves it to json.Unmarshal.
func FuzzFastScan(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		` {"jsonrpc" : "2.0", "id" : "a\"b", "method" : "tools/call", "params" : {"name":"e","arguments":null,"_meta":{"progressToken":1}} } `,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","task":{},"requestState":"s","x":[1,{"y":"}"}]}}`,
		`{"jsonrpc":"2.0","ID":1,"Method":"tools/call","params":{"Name":"echo"}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"},"params":{"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":null}`,
		`{"jsonrpc":"2.0","id":1,"method":5,"params":[]}`,
		`{"jsonrpc":null,"id":-1.5e3,"method":"tools/call","params":{"name":"\u00e9"}}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}",
		`{"ſ":1,"K":2,"jsonrpc":"2.0"}`,
		`[1,2]`, `"x"`, `null`, `{}`, `{"a":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return // refused before either reads it
		}
		var got, want fastRequest
		if ok, _ := scanFast(body, &got); !ok {
			return
		}
		require.NoError(t, json.Unmarshal(body, &want), "scanned what json.Unmarshal refuses: %q", body)
		require.Equal(t, want, got, "%q", body)
	})
}

// The fast path's reading of a call gives what json.Unmarshal gives, and
// leaves to it what it does not read itself (run the seeds, then
// FuzzFastScan for more).
func TestFastScanReadsTheCommonShape(t *testing.T) {
	var req fastRequest
	ok, foreign := scanFast([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`), &req)
	require.True(t, ok)
	require.False(t, foreign)
	require.Equal(t, "tools/call", req.Method)
	require.Equal(t, "echo", req.Params.Name)
	require.JSONEq(t, `{"text":"x"}`, string(req.Params.Arguments))
	for _, s := range []string{
		`{"jsonrpc":"2.0","ID":1,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"ſ":1,"Name":"x"}}`,
	} {
		req = fastRequest{}
		ok, foreign := scanFast([]byte(s), &req)
		require.False(t, ok, s)
		require.True(t, foreign, "json.Unmarshal would read a member the go-sdk does not: %s", s)
	}
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}`,
	} {
		req = fastRequest{}
		ok, foreign := scanFast([]byte(s), &req)
		require.False(t, ok, s)
		require.False(t, foreign, s)
	}
}
