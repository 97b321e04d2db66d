package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawStdio is a client of ServeStdio that writes whatever lines it likes
// and reads the answers as JSON.
type rawStdio struct {
	in      *io.PipeWriter
	answers chan map[string]any
	served  chan error // ServeStdio's return
}

func serveRaw(t *testing.T, g *Gateway) *rawStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &rawStdio{in: inW, answers: make(chan map[string]any, 100), served: make(chan error, 1)}
	go func() { c.served <- g.ServeStdio(context.Background(), inR, outW, "", "") }()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"unparsed": sc.Text()}
			}
			c.answers <- m
		}
		close(c.answers)
	}()
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
	return c
}

func (c *rawStdio) send(t *testing.T, s string) {
	t.Helper()
	_, err := io.WriteString(c.in, s)
	require.NoError(t, err)
}

// next is the next line the gateway wrote.
func (c *rawStdio) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-c.answers:
		require.True(t, ok, "the gateway closed its output")
		return m
	case err := <-c.served:
		t.Fatalf("the session ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	return nil
}

func errorCode(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	code, _ := e["code"].(float64)
	return code
}

// Whatever a stdio client sends by mistake gets a JSON-RPC error and the
// session goes on: only the end of its input ends it.
func TestStdioBadLinesAreAnsweredAndTheSessionGoesOn(t *testing.T) {
	g := newGateway(t, newFakeSource(t))
	c := serveRaw(t, g)
	c.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`+"\n")
	require.Contains(t, c.next(t), "result")
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")

	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	for _, tt := range []struct {
		name, line string
		code       float64
		id         any
	}{
		{"not JSON", "this is not json", -32700, nil},
		{"cut short", `{"jsonrpc": "2.0", "id": 999, "method": `, -32700, 999.0},
		{"cut short, string id", `{"jsonrpc":"2.0","id":"a-1","method":"tools/list","params":{`, -32700, "a-1"},
		{"not a message", `{"hello": "world"}`, -32600, nil},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, -32600, 7.0},
		{"a batch", `[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, -32600, nil},
		{"nested too deep", deep, -32700, nil},
		{"nested deep in params", `{"jsonrpc":"2.0","id":9,"method":"ping","params":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`, -32600, 9.0},
		{"binary", "\x00\xff\xfe{", -32700, nil},
	} {
		c.send(t, tt.line+"\n")
		m := c.next(t)
		assert.Equal(t, tt.code, errorCode(m), "%s: %v", tt.name, m)
		assert.Equal(t, tt.id, m["id"], "%s: the id, when it can be found", tt.name)
	}
	c.send(t, "\n  \r\n") // blank lines: nothing to answer
	c.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\r\n")
	m := c.next(t)
	assert.Equal(t, 2.0, m["id"])
	assert.Contains(t, m, "result", "the session still serves")

	require.NoError(t, c.in.Close())
	select {
	case err := <-c.served:
		require.NoError(t, err, "the end of the input ends the session without an error")
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return at the end of its input")
	}
}

// A line over the limit is read to its end, not kept, and answered with
// the id of the request it held; the next line is served.
func TestStdioLineOverTheLimitIsAnswered(t *testing.T) {
	g := newGateway(t, newFakeSource(t))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	t.Cleanup(func() { _ = inW.Close(); _ = outR.Close() })
	ss, err := g.mustEndpoint(t).srv.Connect(context.Background(), &stdioTransport{r: inR, w: outW, max: 1 << 10}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close() })
	out := bufio.NewScanner(outR)
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"x","arguments":{"blob":"`+strings.Repeat("x", 1<<20)+`"}}}`+"\n")
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":42,"method":"ping"}`+"\n")
	}()
	var got []map[string]any
	for len(got) < 2 && out.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(out.Bytes(), &m))
		got = append(got, m)
	}
	require.Len(t, got, 2)
	assert.Equal(t, -32600.0, errorCode(got[0]))
	assert.Equal(t, 41.0, got[0]["id"], "the request too long to read is answered under its own id")
	assert.Equal(t, 42.0, got[1]["id"])
	assert.Contains(t, got[1], "result")
}

func (g *Gateway) mustEndpoint(t *testing.T) *endpoint {
	t.Helper()
	ep, err := g.endpoint(everything, "")
	require.NoError(t, err)
	return ep
}

// Two messages on one line, or a message with something after it, are
// not half taken: the line is refused whole, under the first one's id.
func TestStdioLineWithMoreThanAMessageIsRefused(t *testing.T) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"} x`, `{"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"}`} {
		msg, answer := decodeLine(line{data: []byte(s)})
		assert.Nil(t, msg, s)
		var m map[string]any
		require.NoError(t, json.Unmarshal(answer, &m))
		assert.Equal(t, -32700.0, errorCode(m), s)
		assert.Equal(t, 1.0, m["id"], s)
	}
}
