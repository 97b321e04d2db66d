package toolsearch

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func words(s string) []string {
	var out []string
	splitWords(s, func(w string, parts []string) bool {
		out = append(out, strings.ToLower(w))
		for _, p := range parts {
			out = append(out, "+"+strings.ToLower(p))
		}
		return true
	})
	return out
}

func TestSplitsNamesAsTheyAreWritten(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"get_file-contents.v2", []string{"get", "file", "contents", "v2"}},
		{"getFileContents", []string{"getfilecontents", "+get", "+file", "+contents"}},
		{"HTTPServer", []string{"httpserver", "+http", "+server"}},
		{"GitHub", []string{"github", "+git", "+hub"}},
		{"list open PRs", []string{"list", "open", "prs"}},
		{"fetch URLs and IDs", []string{"fetch", "urls", "and", "ids"}},
		{"s3_put_object base64", []string{"s3", "put", "object", "base64"}},
		{"github__create_issue", []string{"github", "create", "issue"}},
		{"Größe ändern", []string{"größe", "ändern"}},
		{"  ", nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, words(tt.in), "%q", tt.in)
	}
}

func keys(ts []term) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.key
	}
	return out
}

func TestQueryTermsAreStemmedAndJoinedWithSynonyms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Creating issues", []string{"creat", "issu"}},
		{"list the files in a folder", []string{"list", "file", "directori"}},
		{"remove a repo", []string{"delet", "repositori"}},
		{"open PRs", []string{"open", "pull", "request"}},
		{"getFileContents", []string{"getfilecont", "get", "file", "content"}},
		{"a0123456789012345678901234567890123456789012345678901 b", nil},
		{"issue issues ISSUE", []string{"issu"}},
		{"the a of to", nil},
		{"x y z", nil},
	}
	for _, tt := range tests {
		got := keys(parseQuery(tt.in))
		if len(tt.want) == 0 {
			assert.Empty(t, got, "%q", tt.in)
			continue
		}
		assert.Equal(t, tt.want, got, "%q", tt.in)
	}
}

func TestQueryIsBounded(t *testing.T) {
	long := ""
	for i := range 500 {
		long += "word" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + " "
	}
	assert.Len(t, parseQuery(long), maxQueryTerms)
	// words past maxQueryBytes are not read
	q := parseQuery(string(make([]byte, maxQueryBytes)) + " needle")
	assert.Empty(t, q)
}
