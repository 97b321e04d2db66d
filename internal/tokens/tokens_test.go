package tokens_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/tokens"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Counts are those of the o200k_base encoding (as OpenAI's tiktoken gives
// them), not a characters-per-token guess: the two differ on every one of
// these.
func TestCountsTokensOfTheVocabulary(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"hello world", 2},
		{"Hello, world!", 4},
		{`{"type":"object"}`, 5},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tokens.Count(tt.in), "%q", tt.in)
	}
}

func TestToolCountsItsDefinitionAsListed(t *testing.T) {
	tool := &mcp.Tool{
		Name:        "create_issue",
		Description: "Create a new issue in a GitHub repository",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"owner": map[string]any{"type": "string", "description": "Repository owner"},
				"repo":  map[string]any{"type": "string", "description": "Repository name"},
				"title": map[string]any{"type": "string"},
			},
			"required": []any{"owner", "repo", "title"},
		},
	}
	b, err := json.Marshal(tool)
	require.NoError(t, err)
	n := tokens.Tool(tool)
	assert.Equal(t, tokens.Count(string(b)), n)
	assert.Greater(t, n, 40, "a definition costs more than its name")
	assert.Equal(t, 2*n, tokens.Tools([]*mcp.Tool{tool, tool}))
	assert.Zero(t, tokens.Tool(nil))
	assert.Zero(t, tokens.Tool(&mcp.Tool{Name: "x", InputSchema: map[string]any{"bad": make(chan int)}}),
		"a definition that is not JSON costs nothing rather than failing")
}

// A text past ExactBytes is counted on its head and extrapolated: close to
// the exact count for uniform text, and fast whatever its length.
func TestLongTextIsExtrapolated(t *testing.T) {
	unit := "Returns the contents of a file in the repository, decoded as UTF-8. "
	long := strings.Repeat(unit, 3*tokens.ExactBytes/len(unit))
	per := float64(tokens.Count(strings.Repeat(unit, 100))) / 100
	got := float64(tokens.Count(long))
	want := per * float64(len(long)) / float64(len(unit))
	assert.InEpsilon(t, want, got, 0.01)
}

func TestInvalidUTF8IsCountedAsReplacement(t *testing.T) {
	assert.Equal(t, tokens.Count("ok\uFFFDok"), tokens.Count("ok\xffok"))
}
