package toolsearch_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
)

// quality is how well a search answers the labelled queries: recall@5 is
// the share of queries with a wanted tool among the first five matches,
// MRR the mean of 1/rank of the first wanted tool (0 when none is listed).
type quality struct {
	recall5, mrr float64
	misses       []string
}

func measure(t testing.TB, x *toolsearch.Index, qs []query) quality {
	t.Helper()
	var q quality
	for _, lq := range qs {
		ms, err := x.Search(lq.Query, toolsearch.Options{Limit: toolsearch.MaxLimit})
		require.NoError(t, err)
		rank := slices.IndexFunc(ms, func(m toolsearch.Match) bool { return slices.Contains(lq.Want, m.Name) }) + 1
		if rank > 0 {
			q.mrr += 1 / float64(rank)
		}
		if rank > 0 && rank <= 5 {
			q.recall5++
			continue
		}
		top := make([]string, 0, 5)
		for _, m := range ms[:min(5, len(ms))] {
			top = append(top, m.Name)
		}
		q.misses = append(q.misses, lq.Query+" → rank "+itoa(rank)+"; top: "+join(top))
	}
	q.recall5 /= float64(len(qs))
	q.mrr /= float64(len(qs))
	return q
}

// The labelled queries find what they ask for among the first five
// matches at least nine times in ten.
func TestSearchFindsTheRightToolsOnTheCatalogue(t *testing.T) {
	x := newCatalogueIndex(t, 1)
	q := measure(t, x, loadQueries(t))
	t.Logf("recall@5 %.3f, MRR %.3f over %d tools", q.recall5, q.mrr, x.Snapshot().Len())
	for _, m := range q.misses {
		t.Logf("miss: %s", m)
	}
	assert.GreaterOrEqual(t, q.recall5, 0.9)
}
