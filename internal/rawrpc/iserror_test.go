package rawrpc_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
)

// decodedFlag is the isError flag as a full decode reads it.
func decodedFlag(result []byte) (bool, error) {
	var flag struct {
		IsError bool `json:"isError"`
	}
	err := json.Unmarshal(result, &flag)
	return flag.IsError, err
}

var isErrorCases = []string{
	`{"content":[{"type":"text","text":"x"}]}`,
	`{"content":[],"isError":true}`,
	`{"content":[],"isError":false}`,
	` {"isError":true}`,
	`{"ISERROR":true}`,
	`{"IsError":true}`,
	`{"i\u0073Error":true}`,
	`{"iſError":true}`,
	`{"content":[{"type":"text","text":"isError"}]}`,
	`null`,
	`[]`,
	`"text"`,
	`5`,
	`{}`,
	`{"isError":"yes"}`,
}

// The flag reads as a full decode reads it, key spellings encoding/json
// matches included, and a result that is not an object fails.
func TestIsErrorReadsAsDecoded(t *testing.T) {
	for _, c := range isErrorCases {
		want, wantErr := decodedFlag([]byte(c))
		got, err := rawrpc.IsError(json.RawMessage(c))
		assert.Equal(t, want, got, c)
		assert.Equal(t, wantErr != nil, err != nil, c)
	}
}

func FuzzIsError(f *testing.F) {
	for _, c := range isErrorCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, result []byte) {
		if !json.Valid(result) {
			return // results are valid JSON
		}
		want, wantErr := decodedFlag(result)
		got, err := rawrpc.IsError(result)
		if got != want || (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: IsError = %v, %v; decoded: %v, %v", result, got, err, want, wantErr)
		}
	})
}

// A result asks for input when the go-sdk's client would find its
// inputRequests, under an escape too; a text that merely mentions one
// does not hide it, and a plain result is read without decoding.
func TestInputRequired(t *testing.T) {
	for result, want := range map[string]bool{
		`{"content":[{"type":"text","text":"hi"}]}`:                                     false,
		`{"content":[{"type":"text","text":"caf\u00e9"}]}`:                              false,
		`{"resultType":"input_required","inputRequests":{"a":{"method":"roots/list"}}}`: true,
		`{"input\u0052equests":{"a":{"method":"roots/list"}}}`:                          true,
		`{"inputrequests":{}, "x":"\u0041"}`:                                            false,
	} {
		if got := rawrpc.InputRequired(json.RawMessage(result)); got != want {
			t.Errorf("InputRequired(%s) = %v, want %v", result, got, want)
		}
	}
}
