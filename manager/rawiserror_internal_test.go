package manager

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A raw result's isError flag is read however the server wrote it,
// including a key spelled with escapes, and a result that is not an
// object is refused as before.
func TestRawIsErrorReadsTheFlag(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"content":[]}`:                       false,
		`{"content":[],"isError":false}`:       false,
		` {"content":[],"isError":true}`:       true,
		`{"content":[],"is\u0045rror":true}`:   true,
		`{"content":[{"text":"\"isError\""}]}`: false,
		`{"content":[{"text":"\u003c"}]}`:      false,
		"{\n\"isError\": true\n}":              true,
	} {
		got, err := rawIsError(json.RawMessage(raw))
		require.NoError(t, err, raw)
		require.Equal(t, want, got, raw)
	}
	for _, raw := range []string{`[]`, `"text"`} {
		_, err := rawIsError(json.RawMessage(raw))
		require.Error(t, err, raw)
	}
}
