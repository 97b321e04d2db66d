package tokens_test

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/internal/tokens"
)

func TestCacheCountsEachDefinitionOnce(t *testing.T) {
	var c tokens.Cache
	a := &mcp.Tool{Name: "read_file", Description: "Read a file", InputSchema: map[string]any{"type": "object"}}
	same := &mcp.Tool{Name: "read_file", Description: "Read a file", InputSchema: map[string]any{"type": "object"}}
	changed := &mcp.Tool{Name: "read_file", Description: "Read a whole file as text", InputSchema: map[string]any{"type": "object"}}

	assert.Equal(t, tokens.Tool(a), c.Tool(a))
	assert.Equal(t, tokens.Tool(a), c.Tool(same))
	assert.Equal(t, 1, c.Len(), "an equal definition is the same entry")
	assert.Equal(t, tokens.Tool(changed), c.Tool(changed))
	assert.Equal(t, 2, c.Len(), "a changed definition is counted anew")
	assert.Equal(t, tokens.Tools([]*mcp.Tool{a, changed}), c.Tools([]*mcp.Tool{a, changed}))
}

func TestCacheStaysWithinItsSize(t *testing.T) {
	c := tokens.Cache{Size: 3}
	for i := range 10 {
		c.Tool(&mcp.Tool{Name: fmt.Sprintf("t%d", i), InputSchema: map[string]any{"type": "object"}})
		assert.LessOrEqual(t, c.Len(), 3)
	}
}

// Counted answers only what has been counted: it never encodes.
func TestCountedNeverCounts(t *testing.T) {
	var c tokens.Cache
	tool := &mcp.Tool{Name: "echo", Description: "say it back", InputSchema: map[string]any{"type": "object"}}
	_, ok := c.Counted(tool)
	assert.False(t, ok, "not counted yet")
	assert.Zero(t, c.Len())
	n := c.Tool(tool)
	got, ok := c.Counted(tool)
	assert.True(t, ok)
	assert.Equal(t, n, got)
}
