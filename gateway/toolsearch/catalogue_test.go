package toolsearch_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
)

// catalogue is testdata/catalogue.json: the tools of the reference MCP
// servers as they list them, the reference servers that cannot run here
// written from their published lists, and look-alikes of popular servers.
type catalogue struct {
	Servers []struct {
		Name   string      `json:"name"`
		Source string      `json:"source"`
		Tools  []*mcp.Tool `json:"tools"`
	} `json:"servers"`
}

// exposed is a tool's name on /mcp (the reference names need no
// sanitising).
func exposed(server, tool string) string { return server + "__" + tool }

func loadCatalogue(t testing.TB) catalogue {
	t.Helper()
	b, err := os.ReadFile("testdata/catalogue.json")
	require.NoError(t, err)
	var c catalogue
	require.NoError(t, json.Unmarshal(b, &c))
	return c
}

// entries is the catalogue as index entries; copies > 1 adds that many
// look-alike installations of every server (github-2, ...), with the
// same tools, to make a larger catalogue.
func (c catalogue) entries(copies int) []toolsearch.Entry {
	var out []toolsearch.Entry
	for i := range copies {
		for _, s := range c.Servers {
			server := s.Name
			if i > 0 {
				server = fmt.Sprintf("%s-%d", s.Name, i+1)
			}
			for _, tool := range s.Tools {
				out = append(out, toolsearch.EntryOf(server, exposed(server, tool.Name), tool, nil))
			}
		}
	}
	return out
}

func (c catalogue) tools() []*mcp.Tool {
	var out []*mcp.Tool
	for _, s := range c.Servers {
		for _, tool := range s.Tools {
			def := *tool
			def.Name = exposed(s.Name, tool.Name)
			out = append(out, &def)
		}
	}
	return out
}

func (c catalogue) serverNames() []string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.Name)
	}
	return out
}

func newCatalogueIndex(t testing.TB, copies int) *toolsearch.Index {
	t.Helper()
	x := toolsearch.New()
	require.NoError(t, x.Sync(loadCatalogue(t).entries(copies)))
	return x
}

// query is one labelled query of testdata/queries.json: a request in a
// user's words and the tools that answer it (any one will do).
type query struct {
	Query string   `json:"query"`
	Want  []string `json:"want"`
}

func loadQueries(t testing.TB) []query {
	t.Helper()
	b, err := os.ReadFile("testdata/queries.json")
	require.NoError(t, err)
	var qs []query
	require.NoError(t, json.Unmarshal(b, &qs))
	return qs
}

func TestCatalogueIsLargeAndQueriesAnswerable(t *testing.T) {
	c := loadCatalogue(t)
	x := newCatalogueIndex(t, 1)
	require.GreaterOrEqual(t, x.Snapshot().Len(), 300)
	qs := loadQueries(t)
	require.GreaterOrEqual(t, len(qs), 50)
	for _, q := range qs {
		for _, w := range q.Want {
			require.True(t, x.Snapshot().Has(w), "query %q wants %s, which the catalogue lacks", q.Query, w)
		}
	}
	require.NotEmpty(t, c.Servers)
}
