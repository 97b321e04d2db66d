package toolsearch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
)

func smallIndex(t *testing.T) *toolsearch.Index {
	t.Helper()
	x := toolsearch.New()
	require.NoError(t, x.Sync([]toolsearch.Entry{
		{Name: "github__create_issue", Server: "github", Description: "Create a new issue in a GitHub repository",
			Params: []toolsearch.Param{{Name: "owner", Description: "Repository owner"}, {Name: "title", Description: "Issue title"}}},
		{Name: "gitlab__create_issue", Server: "gitlab", Description: "Create a new issue in a GitLab project"},
		{Name: "github__list_issues", Server: "github", Description: "List issues in a GitHub repository with filtering options"},
		{Name: "puppeteer__puppeteer_screenshot", Server: "puppeteer", Description: "Take a screenshot of the current page or a specific element"},
		{Name: "tracker__new_ticket", Server: "tracker", Description: "Open a ticket", Tags: []string{"bug report", "issue"}},
		{Name: "a__same", Server: "a", Description: "identical words"},
		{Name: "b__same", Server: "b", Description: "identical words"},
	}))
	return x
}

func TestBestMatchFirstWithWhyItMatched(t *testing.T) {
	x := smallIndex(t)
	ms, err := x.Search("create an issue on GitHub", toolsearch.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	top := ms[0]
	assert.Equal(t, "github__create_issue", top.Name)
	assert.Equal(t, "github", top.Server)
	assert.Equal(t, "Create a new issue in a GitHub repository", top.Description)
	assert.Equal(t, []toolsearch.Hit{
		{Word: "create", Fields: []string{"name", "description"}},
		{Word: "issue", Fields: []string{"name", "description", "params"}},
		{Word: "github", Fields: []string{"name", "server", "description"}},
	}, top.Why)
}

// A user's tags and aliases find a tool whose own words do not.
func TestTagsFindATool(t *testing.T) {
	ms, err := smallIndex(t).Search("file a bug report", toolsearch.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	assert.Equal(t, "tracker__new_ticket", ms[0].Name)
	assert.Equal(t, []string{"tags"}, ms[0].Why[0].Fields)
}

// A word typed as the start of a longer one still finds it, below an
// exact match, and says so.
func TestPrefixFindsLongerWords(t *testing.T) {
	ms, err := smallIndex(t).Search("screen", toolsearch.Options{})
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "puppeteer__puppeteer_screenshot", ms[0].Name)
	assert.Equal(t, []toolsearch.Hit{{Word: "screen", Fields: []string{"name", "description"}, Prefix: true}}, ms[0].Why)
}

// Equal scores are ordered by name, so the same query always lists the
// same tools in the same order.
func TestTiesAreInNameOrder(t *testing.T) {
	x := smallIndex(t)
	for range 20 {
		ms, err := x.Search("identical words", toolsearch.Options{})
		require.NoError(t, err)
		require.Len(t, ms, 2)
		assert.Equal(t, ms[0].Score, ms[1].Score)
		assert.Equal(t, []string{"a__same", "b__same"}, names(ms))
	}
}

func TestFilters(t *testing.T) {
	x := smallIndex(t)
	ms, err := x.Search("create issue", toolsearch.Options{Server: "GitLab"})
	require.NoError(t, err)
	assert.Equal(t, []string{"gitlab__create_issue"}, names(ms), "server names compare without case")

	ms, err = x.Search("issue", toolsearch.Options{Allow: func(n string) bool { return !strings.HasPrefix(n, "github__") }})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"tracker__new_ticket", "gitlab__create_issue"}, names(ms))

	ms, err = x.Search("issue", toolsearch.Options{Limit: 1})
	require.NoError(t, err)
	assert.Len(t, ms, 1)
}

func TestLimitDefaultsAndCap(t *testing.T) {
	x := newCatalogueIndex(t, 1)
	ms, err := x.Search("list", toolsearch.Options{})
	require.NoError(t, err)
	assert.Len(t, ms, toolsearch.DefaultLimit)
	ms, err = x.Search("list", toolsearch.Options{Limit: 1000})
	require.NoError(t, err)
	assert.Len(t, ms, toolsearch.MaxLimit)
}

// A query without a word to look for lists a server's tools, in name
// order, or asks for words.
func TestEmptyQuery(t *testing.T) {
	x := smallIndex(t)
	ms, err := x.Search("  the ", toolsearch.Options{Server: "github"})
	require.NoError(t, err)
	assert.Equal(t, []string{"github__create_issue", "github__list_issues"}, names(ms))
	assert.Empty(t, ms[0].Why)

	_, err = x.Search("", toolsearch.Options{})
	assert.True(t, isCode(err, toolsearch.CodeEmptyQuery), "%v", err)
	assert.Contains(t, err.Error(), "server", "the error says what to give instead")
}

// A query of many short words cannot make a search expand without end:
// prefixes stop at 64 index terms in all, each word's at 16.
func TestPrefixExpansionIsBounded(t *testing.T) {
	var desc, query []string
	for c := 'a'; c <= 'j'; c++ {
		p := "qa" + string(c)
		query = append(query, p)
		for i := range 20 {
			desc = append(desc, fmt.Sprintf("%sx%d", p, i))
		}
	}
	x := toolsearch.New()
	require.NoError(t, x.Add(toolsearch.Entry{Name: "s__t", Server: "s", Description: strings.Join(desc, " ")}))
	ms, err := x.Search(strings.Join(query, " "), toolsearch.Options{})
	require.NoError(t, err)
	require.Len(t, ms, 1)
	var words []string
	for _, h := range ms[0].Why {
		words = append(words, h.Word)
	}
	assert.Equal(t, []string{"qaa", "qab", "qac", "qad"}, words)
}

func TestServersAreListed(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "github", "gitlab", "puppeteer", "tracker"}, smallIndex(t).Snapshot().Servers())
}
