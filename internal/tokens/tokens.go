package tokens

import (
	"encoding/json"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tiktoken-go/tokenizer/codec"
)

// ExactBytes is how much of a text is encoded; the count of a longer text
// is extrapolated from that of its first ExactBytes.
const ExactBytes = 256 << 10

// Encoding names the vocabulary the counts are made with.
const Encoding = "o200k_base"

var encoder = sync.OnceValue(codec.NewO200kBase)

// Count is the number of tokens s encodes to. Bytes that are not UTF-8 are
// counted as the replacement character a client would see.
func Count(s string) int {
	if s == "" {
		return 0
	}
	if !utf8.ValidString(s) {
		s = sanitize(s)
	}
	if len(s) <= ExactBytes {
		return count(s)
	}
	head := s[:ExactBytes]
	for !utf8.ValidString(head) { // cut at a rune boundary
		head = head[:len(head)-1]
	}
	n := count(head)
	return int(float64(n) * float64(len(s)) / float64(len(head)))
}

func count(s string) int {
	n, err := encoder().Count(s)
	if err != nil {
		// The codec errs only on invalid UTF-8 in its strict mode, which
		// is not the one used; fall back to the usual ratio rather than
		// report nothing.
		return (len(s) + 3) / 4
	}
	return n
}

func sanitize(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}

// Tool is the number of tokens of t's definition as tools/list carries it.
// A tool whose definition cannot be encoded as JSON (a schema holding a
// channel or a function) costs 0.
func Tool(t *mcp.Tool) int {
	b, ok := definition(t)
	if !ok {
		return 0
	}
	return Count(string(b))
}

// Tools is the sum of the costs of ts.
func Tools(ts []*mcp.Tool) int {
	n := 0
	for _, t := range ts {
		n += Tool(t)
	}
	return n
}

func definition(t *mcp.Tool) ([]byte, bool) {
	if t == nil {
		return nil, false
	}
	b, err := json.Marshal(t)
	return b, err == nil
}
