package toolsearch

import (
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzQuery searches a small index with whatever a model might send: the
// query parser never panics, keeps within its bounds, gives terms that are
// valid UTF-8, and a search is bounded, ordered and repeatable.
func FuzzQuery(f *testing.F) {
	for _, seed := range []string{
		"create an issue on GitHub", "list open PRs", "getFileContents", "HTTPServer",
		"", " ", "\x00\xff\xfe", "a_b-c.d", "ÄÖÜ größe", "PRsX", "🙂 emoji", "s3 k8s",
		"screen", "the of to", "\u202e\u200b", string(make([]byte, 2000)),
	} {
		f.Add(seed, "", 0)
	}
	f.Add("issue", "GitHub", 3)
	x := New()
	for _, e := range []Entry{
		{Name: "github__create_issue", Server: "github", Description: "Create a new issue in a GitHub repository", Tags: []string{"ticket"}},
		{Name: "filesystem__read_file", Server: "filesystem", Description: "Read the complete contents of a file", Params: []Param{{Name: "path"}}},
		{Name: "ü__größe", Server: "ü", Description: "Größe ändern"},
	} {
		if err := x.Add(e); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, q, server string, limit int) {
		terms := parseQuery(q)
		if len(terms) > maxQueryTerms {
			t.Fatalf("%d terms", len(terms))
		}
		for _, tm := range terms {
			if tm.key == "" || tm.word == "" || !utf8.ValidString(tm.key) || !utf8.ValidString(tm.word) {
				t.Fatalf("bad term %+v", tm)
			}
		}
		o := Options{Server: server, Limit: limit}
		ms, err := x.Search(q, o)
		if err != nil {
			if len(terms) > 0 || server != "" {
				t.Fatalf("search failed with words or a server: %v", err)
			}
			return
		}
		want := limit
		if want <= 0 {
			want = DefaultLimit
		}
		if len(ms) > min(want, MaxLimit) {
			t.Fatalf("%d matches for limit %d", len(ms), limit)
		}
		for i := 1; i < len(ms); i++ {
			a, b := ms[i-1], ms[i]
			if a.Score < b.Score || a.Score == b.Score && a.Name > b.Name {
				t.Fatalf("out of order: %+v before %+v", a, b)
			}
		}
		again, _ := x.Search(q, o)
		if !reflect.DeepEqual(ms, again) {
			t.Fatalf("not repeatable: %+v then %+v", ms, again)
		}
	})
}
