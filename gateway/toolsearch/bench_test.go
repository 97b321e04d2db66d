package toolsearch_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/internal/tokens"
)

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkSearchTools is what search_tools costs on a catalogue of about
// 1,000 tools (the test catalogue three times over): a search for one of
// the labelled queries and the JSON of its answer. It reports the median
// and the 99th percentile of a single search.
func BenchmarkSearchTools(b *testing.B) {
	x := newCatalogueIndex(b, 3)
	qs := loadQueries(b)
	ds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		ms, err := x.Search(qs[i%len(qs)].Query, toolsearch.Options{Limit: 10})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(toolsearch.SearchResult{Matches: ms}); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.ReportMetric(float64(x.Snapshot().Len()), "tools")
	b.ReportMetric(micros(testutil.Percentile(ds, 50)), "p50-µs")
	b.ReportMetric(micros(testutil.Percentile(ds, 99)), "p99-µs")
}

// BenchmarkReplaceOne is the cost of one tool changing in a 1,000-tool
// index: only that tool is analysed again.
func BenchmarkReplaceOne(b *testing.B) {
	all := loadCatalogue(b).entries(3)
	x := toolsearch.New()
	require.NoError(b, x.Sync(all))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e := all[i%len(all)]
		if i%2 == 0 {
			e.Description += " revised"
		}
		if err := x.Replace(e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncAll is the cost of indexing 1,000 tools at once.
func BenchmarkSyncAll(b *testing.B) {
	all := loadCatalogue(b).entries(3)
	b.ReportAllocs()
	for b.Loop() {
		if err := toolsearch.New().Sync(all); err != nil {
			b.Fatal(err)
		}
	}
}

// tokenCost is what listing the catalogue costs a client in tokens, and
// what the meta-tools of the search mode cost instead.
func tokenCost(t testing.TB) (direct, search int) {
	c := loadCatalogue(t)
	return tokens.Tools(c.tools()), tokens.Tools(toolsearch.MetaTools("", c.serverNames()))
}

// The meta-tools cost a twentieth of the catalogue or less, even with
// every server named in search_tools' description.
func TestMetaToolsCostAFractionOfTheCatalogue(t *testing.T) {
	direct, search := tokenCost(t)
	ratio := float64(search) / float64(direct)
	t.Logf("%s tokens: catalogue %d, search meta-tools %d (%.1f%%)", tokens.Encoding, direct, search, 100*ratio)
	assert.LessOrEqual(t, ratio, 0.05)
}

// BenchmarkTokenCost reports the token figures (the work measured is
// counting the catalogue once more, through a warm cache).
func BenchmarkTokenCost(b *testing.B) {
	direct, search := tokenCost(b)
	var cache tokens.Cache
	tools := loadCatalogue(b).tools()
	cache.Tools(tools)
	for b.Loop() {
		cache.Tools(tools)
	}
	b.ReportMetric(float64(direct), "direct-tokens")
	b.ReportMetric(float64(search), "search-tokens")
	b.ReportMetric(100*float64(search)/float64(direct), "search-%")
}
