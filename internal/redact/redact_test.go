package redact_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/redact"
)

// A value from the environment is hidden in every form a server may print
// it in, and shown as the reference it was written as.
func TestHidesEveryForm(t *testing.T) {
	const v = `s3cr&t/"key"+=<x>`
	s := redact.New(map[string]string{"API_KEY": v, "SHORT": "abc"})
	js, _ := json.Marshal(v)
	for _, tt := range []struct{ name, text string }{
		{"as is", "starting with --key=" + v + " now"},
		{"JSON", `{"args":["--key",` + string(js) + `]}`},
		{"Go quoted", fmt.Sprintf("arg %q", v)},
		{"query", "GET /x?key=" + url.QueryEscape(v)},
		{"path", "GET /" + url.PathEscape(v)},
		{"lower-case hex", "GET /x?key=" + strings.ToLower(url.QueryEscape(v))},
		{"base64", "token " + base64.StdEncoding.EncodeToString([]byte(v))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := s.String(tt.text)
			require.Contains(t, got, "${API_KEY}")
			require.NotContains(t, got, "s3cr")
		})
	}
	require.Equal(t, "abc is short, so it stays", s.String("abc is short, so it stays"))
	require.Nil(t, redact.New(map[string]string{"SHORT": "abc"}))
	require.Equal(t, "as it is", (*redact.Secrets)(nil).String("as it is"))
}

// A value that holds its own reference cannot be brought back by the
// replacement: the text is withheld rather than shown with it.
func TestValueHoldingItsReference(t *testing.T) {
	s := redact.New(map[string]string{"S": "a${S}b"})
	got := s.String("aa${S}bb")
	require.NotContains(t, got, "a${S}b")
}
