package toolsearch_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
)

func entry(server, tool, desc string) toolsearch.Entry {
	return toolsearch.Entry{Name: exposed(server, tool), Server: server, Description: desc}
}

func names(ms []toolsearch.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func isCode(err error, c toolsearch.Code) bool { return errors.Is(err, &toolsearch.Error{Code: c}) }

func TestChangesAreCheckedAndNameTheTool(t *testing.T) {
	x := toolsearch.New()
	require.NoError(t, x.Add(entry("git", "log", "Shows the commit logs")))

	err := x.Add(entry("git", "log", "again"))
	assert.True(t, isCode(err, toolsearch.CodeDuplicate), "%v", err)
	var te *toolsearch.Error
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "git__log", te.Tool)
	assert.Equal(t, "add", te.Op)

	assert.True(t, isCode(x.Add(toolsearch.Entry{Server: "git"}), toolsearch.CodeInvalidEntry))
	assert.True(t, isCode(x.Replace(entry("git", "status", "")), toolsearch.CodeNotFound))
	assert.True(t, isCode(x.Remove("git__status"), toolsearch.CodeNotFound))

	dup := []toolsearch.Entry{entry("a", "t", "one"), entry("a", "t", "two")}
	assert.True(t, isCode(x.Sync(dup), toolsearch.CodeDuplicate))
	assert.True(t, x.Snapshot().Has("git__log"), "a failed Sync leaves the index as it was")
	assert.Equal(t, 1, x.Snapshot().Len())
}

func TestReplaceAndRemoveChangeWhatIsFound(t *testing.T) {
	x := toolsearch.New()
	require.NoError(t, x.Add(entry("git", "log", "Shows the commit logs")))
	require.NoError(t, x.Add(entry("git", "status", "Shows the working tree status")))

	ms, err := x.Search("commit history", toolsearch.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"git__log"}, names(ms))

	require.NoError(t, x.Replace(entry("git", "log", "Lists past revisions")))
	ms, err = x.Search("commit history", toolsearch.Options{})
	require.NoError(t, err)
	assert.Empty(t, ms, "the old description is forgotten")
	ms, err = x.Search("revisions", toolsearch.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"git__log"}, names(ms))

	require.NoError(t, x.Remove("git__log"))
	ms, err = x.Search("revisions", toolsearch.Options{})
	require.NoError(t, err)
	assert.Empty(t, ms)
	assert.Equal(t, 1, x.Snapshot().Len())
}

// A snapshot is what the index was when it was taken, whatever changes
// after: a search in flight sees one consistent catalogue.
func TestSnapshotDoesNotChangeUnderUpdates(t *testing.T) {
	x := toolsearch.New()
	require.NoError(t, x.Sync([]toolsearch.Entry{entry("git", "log", "Shows the commit logs")}))
	before := x.Snapshot()
	want, err := before.Search("commit logs", toolsearch.Options{})
	require.NoError(t, err)

	require.NoError(t, x.Replace(entry("git", "log", "Something else entirely")))
	require.NoError(t, x.Add(entry("hg", "log", "Shows the commit logs of a Mercurial repository")))

	got, err := before.Search("commit logs", toolsearch.Options{})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, 1, before.Len())
	e, ok := before.Entry("git__log")
	require.True(t, ok)
	assert.Equal(t, "Shows the commit logs", e.Description)
}

// However an index got to hold a set of tools — one change at a time in
// any order, or Syncs of overlapping sets — it answers every query as an
// index built from that set at once.
func TestIncrementalChangesRankAsAFreshIndex(t *testing.T) {
	all := loadCatalogue(t).entries(1)
	qs := loadQueries(t)
	rng := rand.New(rand.NewPCG(1, 2))
	x := toolsearch.New()
	held := map[string]toolsearch.Entry{}
	for step := range 400 {
		e := all[rng.IntN(len(all))]
		switch _, ok := held[e.Name]; {
		case !ok:
			require.NoError(t, x.Add(e))
			held[e.Name] = e
		case step%3 == 0:
			e.Description += " (revised)"
			e.Tags = []string{"revised"}
			require.NoError(t, x.Replace(e))
			held[e.Name] = e
		default:
			require.NoError(t, x.Remove(e.Name))
			delete(held, e.Name)
		}
		if step%50 == 0 {
			// a Sync that keeps some, drops some and adds some
			var want []toolsearch.Entry
			for _, h := range held {
				if rng.IntN(4) > 0 {
					want = append(want, h)
				}
			}
			for range 20 {
				e := all[rng.IntN(len(all))]
				if _, ok := held[e.Name]; !ok {
					held[e.Name] = e
					want = append(want, e)
				}
			}
			held = map[string]toolsearch.Entry{}
			for _, e := range want {
				held[e.Name] = e
			}
			require.NoError(t, x.Sync(want))
		}
	}
	fresh := toolsearch.New()
	var set []toolsearch.Entry
	for _, e := range held {
		set = append(set, e)
	}
	require.NoError(t, fresh.Sync(set))
	require.Equal(t, fresh.Snapshot().Len(), x.Snapshot().Len())
	for _, q := range append(qs, query{Query: "revised"}, query{Query: "rev"}) {
		want, err := fresh.Search(q.Query, toolsearch.Options{Limit: toolsearch.MaxLimit})
		require.NoError(t, err)
		got, err := x.Search(q.Query, toolsearch.Options{Limit: toolsearch.MaxLimit})
		require.NoError(t, err)
		require.Equal(t, len(want), len(got), q.Query)
		for i := range want {
			assert.Equal(t, want[i].Name, got[i].Name, "%s #%d", q.Query, i)
			assert.InDelta(t, want[i].Score, got[i].Score, 1e-9, "%s #%d", q.Query, i)
			assert.Equal(t, want[i].Why, got[i].Why, "%s #%d", q.Query, i)
		}
	}
}

// Searches run while the index changes, without locks between them (run
// with -race).
func TestSearchesRunWhileTheIndexChanges(t *testing.T) {
	all := loadCatalogue(t).entries(1)
	x := toolsearch.New()
	require.NoError(t, x.Sync(all[:100]))
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			for i := range 200 {
				_, err := x.Search(fmt.Sprintf("create issue %d", i+r), toolsearch.Options{Limit: 5})
				assert.NoError(t, err)
			}
		})
	}
	for i := range 100 {
		require.NoError(t, x.Add(all[100+i]))
		require.NoError(t, x.Remove(all[i].Name))
	}
	wg.Wait()
	assert.Equal(t, 100, x.Snapshot().Len())
}
