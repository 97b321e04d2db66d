package rawrpc

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzReadAnswer: whatever a server writes, the reader reads an answer
// in it as json.Unmarshal does: the same id, result and error, or none.
func FuzzReadAnswer(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"mcpvisor-raw-1","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"result":{"isError":true},"id":"mcpvisor-raw-2","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":"mcpvisor-raw-3","error":{"code":-32602,"message":"no"}}`,
		`{"jsonrpc":"2.0","ID":"mcpvisor-raw-4","result":{}}`,
		`{"jsonrpc":"2.0","id":"mcpvisor-raw-5","result":{},"Result":1}`,
		`{"jsonrpc":"2.0","id":"mcpvisor-raw-\u0036","result":null}`,
		`{"jsonrpc":"2.0","id":"mcpvisor-raw-7","method":"x"}`,
		`{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"id":"mcpvisor-raw-8","id":"mcpvisor-raw-9","result":1}`,
		`{"ıd":"mcpvisor-raw-10","result":1}`,
		`[{"id":"mcpvisor-raw-11"}]`,
		`{"id":"mcpvisor-raw-12"}`,
		`{"id":"mcpvisor-raw-13","result":1,"method":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := readAnswer(line)
		want, wantOK := decodeAnswer(line)
		require.Equal(t, wantOK, ok, "answer or not")
		if !ok {
			return
		}
		require.Equal(t, want.ID, got.ID, "id")
		require.Equal(t, want.Result == nil, got.Result == nil, "a result or none")
		require.Equal(t, string(want.Result), string(got.Result), "result")
		require.Equal(t, want.Error, got.Error, "error")
	})
}
