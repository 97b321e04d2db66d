package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repeated is n bytes of b, made as they are read.
type repeated struct {
	block []byte
	n     int64
}

func repeatedBytes(b byte, n int64) *repeated {
	return &repeated{block: bytes.Repeat([]byte{b}, 64<<10), n: n}
}

func (r *repeated) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(int64(len(p)), r.n)], r.block)
	r.n -= int64(k)
	return k, nil
}

// A 100 MB line is read to its end in bounded memory and reported as too
// long with its head; the lines around it come through whole.
func TestLineReaderSkipsAHundredMegabyteLine(t *testing.T) {
	t.Parallel()
	in := io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"+`{"id":5,"params":"`),
		repeatedBytes('x', 100<<20),
		strings.NewReader("\"}\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\r\n"+"last, without a newline"),
	)
	lr := newLineReader(in, maxLine)
	l, err := lr.next()
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, string(l.data))

	l, err = lr.next()
	require.NoError(t, err)
	require.True(t, l.tooLong)
	assert.Len(t, l.data, headLen, "only the head is kept")
	assert.Equal(t, json.RawMessage("5"), requestID(l.data))
	assert.Less(t, cap(lr.buf), 2*maxLine, "room for one line of the limit, not for the whole line")

	l, err = lr.next()
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, string(l.data), "the line ending is not part of the line")
	assert.Less(t, cap(lr.buf), 1<<20, "the long line's room is given back")

	l, err = lr.next()
	require.NoError(t, err)
	assert.Equal(t, "last, without a newline", string(l.data))
	_, err = lr.next()
	require.ErrorIs(t, err, io.EOF)
}

func TestRequestIDFromTheHeadOfALine(t *testing.T) {
	for _, tt := range []struct{ head, want string }{
		{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"x":"yyy`, `12`},
		{`{"method":"x","params":{"id":3,"a":[1,{"id":4}]},"id":"abc"}`, `"abc"`},
		{`{"params":{"deep":[[[[`, ``},
		{`{"id":{"not":"an id"}}`, ``},
		{`{"id":null}`, ``},
		{`{"id":-1.5e3}`, `-1.5e3`},
		{`[{"id":1}]`, ``},
		{`garbage`, ``},
		{``, ``},
	} {
		got := requestID([]byte(tt.head))
		assert.Equal(t, tt.want, string(got), tt.head)
	}
}

// FuzzLineReader: whatever bytes a stdio client sends, the reader splits
// them into the lines they hold (none longer than the limit passes), and
// each line is either a message or an answer that is one valid JSON-RPC
// error response; nothing panics.
func FuzzLineReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		"garbage\n{\"jsonrpc\": \"2.0\", \"id\": 999, \"method\": \n",
		`[{"jsonrpc":"2.0","id":3,"method":"tools/list"}]` + "\r\n\n",
		`{"id":"` + strings.Repeat("z", 100) + `"}`,
		strings.Repeat("[", 300) + "\n" + strings.Repeat("{\"a\":", 50),
		"\x00\xff\n\n\r\n",
	} {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, in []byte, limit int) {
		limit = 1 + int(uint(limit)%256)
		lr := newLineReader(bytes.NewReader(in), limit)
		var lines [][]byte
		for {
			l, err := lr.next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if l.tooLong {
				require.LessOrEqual(t, len(l.data), headLen)
			} else {
				require.LessOrEqual(t, len(l.data), limit)
				require.NotContains(t, string(l.data), "\n")
				lines = append(lines, bytes.Clone(l.data))
			}
			msg, answer := decodeLine(l)
			require.False(t, msg != nil && answer != nil)
			if answer != nil {
				var resp struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Error   struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal(answer, &resp), "%s", answer)
				require.Equal(t, "2.0", resp.JSONRPC)
				require.Contains(t, []int{-32700, -32600}, resp.Error.Code)
				require.NotEmpty(t, resp.ID, "id is present (null when unknown)")
			}
		}
		if !bytes.Contains(in, []byte("\r")) && !tooLongIn(in, limit) {
			joined := bytes.Join(lines, []byte("\n"))
			require.Equal(t, string(bytes.TrimSuffix(in, []byte("\n"))), string(joined), "the lines are the input")
		}
	})
}

// tooLongIn reports whether a line of in is longer than limit.
func tooLongIn(in []byte, limit int) bool {
	for _, l := range bytes.Split(in, []byte("\n")) {
		if len(l) > limit {
			return true
		}
	}
	return false
}
