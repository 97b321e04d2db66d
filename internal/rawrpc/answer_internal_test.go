package rawrpc

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// answerCases are lines a server may write with a raw call's id in them,
// among them every shape the one-pass reading must leave to json.Unmarshal.
var answerCases = []string{
	`{"jsonrpc":"2.0","id":"mcpvisor-raw-1","result":{"content":[{"type":"text","text":"x"}]}}` + "\n",
	` { "result" : [1, {"a":"}"}] , "id" : "mcpvisor-raw-2" } ` + "\n",
	`{"id":"mcpvisor-raw-3","result":null}`,
	`{"id":"mcpvisor-raw-4","result":"a \"quoted\" }"}`,
	`{"id":"mcpvisor-raw-5","result":-1.5e3}`,
	`{"id":"mcpvisor-raw-6"}`,                                         // neither result nor error
	`{"id":"mcpvisor-raw-7","error":{"code":-32000,"message":"no"}}`,  // an error
	`{"id":"mcpvisor-raw-8","error":{"code":"x"}}`,                    // an error Unmarshal refuses
	`{"id":"mcpvisor-raw-9","error":null,"result":{}}`,                // a null error is none
	`{"id":"mcpvisor-raw-10","method":"x","result":{}}`,               // a request
	`{"id":"mcpvisor-raw-11","method":null,"result":{}}`,              // a null method is none
	`{"id":"mcpvisor-raw-12","Result":{"a":1}}`,                       // a name in another case
	`{"ID":"mcpvisor-raw-13","result":{}}`,                            // the id's name in another case
	`{"id":"mcpvisor-raw-14","re\u0073ult":{}}`,                       // an escaped name
	`{"id":"mcpvisor-raw-15","reſult":{}}`,                            // ſ folds to s
	`{"id":"mcpvisor-raw-16","result":{},"result":[]}`,                // the last one counts
	`{"id":"mcpvisor-raw-17","id":"mcpvisor-raw-18","result":{}}`,     // so for the id
	`{"id":"mcpvisor-raw-\u0031\u0039","result":{}}`,                  // an escaped id
	`{"id":19,"result":{}}`,                                           // a number: no call of ours
	`{"id":"mcpvisor-raw-","result":{}}`,                              // the prefix alone
	`{"id":"other","result":{},"note":"mcpvisor-raw-20"}`,             // the marker elsewhere
	`{"id":null,"result":{}}`,                                         // null
	`{"id":"mcpvisor-raw-21","result":{}`,                             // not JSON
	`["mcpvisor-raw-22"]`,                                             // not an object
	`{"id":"mcpvisor-raw-23","result":{},"jsonrpc":"2.0","x":[true]}`, // more members
	`{"id":"mcpvisor-raw-24","result":{},"Jsonrpc":"2.0"}`,            // an ignored name in another case
	"{\"id\":\"mcpvisor-raw-25\",\"result\":\"\xff\"}",                // a result not in UTF-8
	"{\"id\":\"mcpvisor-raw-\xdf\",\"result\":\"\"}",                  // an id Unmarshal reads with U+FFFD
	`{"id":"mcpvisor-raw-26","result":{"id":"mcpvisor-raw-27"}}`,      // an id inside the result
}

// Each line is read as json.Unmarshal reads it: the same call's id, the
// same result, byte for byte, or the same error; or not at all, for the
// go-sdk, when Unmarshal would not take it either.
func TestAnswerOfReadsAsUnmarshal(t *testing.T) {
	for _, line := range answerCases {
		sameAnswer(t, []byte(line))
	}
}

func FuzzAnswerOf(f *testing.F) {
	for _, line := range answerCases {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) { sameAnswer(t, line) })
}

// sameAnswer fails t unless answerOf reads line as the reference does.
func sameAnswer(t *testing.T, line []byte) {
	t.Helper()
	id, a, ok := answerOf(line)
	wantID, want, wantOK := unmarshalAnswer(line)
	require.Equal(t, wantOK, ok, "%q: taken", line)
	if !ok {
		return
	}
	require.Equal(t, wantID, id, "%q: id", line)
	require.Equal(t, string(want.result), string(a.result), "%q: result", line)
	require.Equal(t, want.result == nil, a.result == nil, "%q: a result", line)
	require.Equal(t, want.err, a.err, "%q: error", line)
}

// unmarshalAnswer is the reference: the line decoded with json.Unmarshal.
func unmarshalAnswer(line []byte) (string, answer, bool) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != nil {
		return "", answer{}, false
	}
	var id string
	if json.Unmarshal(msg.ID, &id) != nil || len(id) <= len(IDPrefix) || id[:len(IDPrefix)] != IDPrefix {
		return "", answer{}, false
	}
	switch {
	case msg.Error != nil:
		return id, answer{err: msg.Error}, true
	case msg.Result == nil:
		return id, answer{err: errors.New("the server's answer has neither a result nor an error")}, true
	}
	return id, answer{result: msg.Result}, true
}
