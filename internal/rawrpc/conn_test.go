package rawrpc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
)

// stream is a Conn between a fake server (out: what it writes; in: what
// it reads) and a fake SDK (sdk: the lines it reads).
type stream struct {
	c       *rawrpc.Conn
	out     *io.PipeWriter
	in      *bufio.Reader
	sdk     chan string
	sdkDone chan struct{}
}

func newStream(t *testing.T) *stream { return newStreamSeeing(t, nil) }

// newStreamSeeing is newStream with seen, if not nil, seeing the lines
// the SDK is handed.
func newStreamSeeing(t *testing.T, seen func(line []byte)) *stream {
	t.Helper()
	outR, outW := io.Pipe()
	inR, inW := io.Pipe()
	s := &stream{c: rawrpc.New(outR, inW), out: outW, in: bufio.NewReader(inR), sdk: make(chan string, 16), sdkDone: make(chan struct{})}
	if seen != nil {
		s.c.Seeing(seen)
	}
	go func() {
		defer close(s.sdkDone)
		defer close(s.sdk)
		r := bufio.NewReader(s.c.Reader())
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				s.sdk <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = outW.Close()
		_ = inR.Close()
		<-s.sdkDone
	})
	return s
}

func (s *stream) serverWrites(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		_, err := io.WriteString(s.out, l+"\n")
		require.NoError(t, err)
	}
}

// request reads the next line the server got.
func (s *stream) request(t *testing.T) map[string]any {
	t.Helper()
	line, err := s.in.ReadBytes('\n')
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(line, &m), "line %q", line)
	return m
}

func TestOtherLinesReachTheSDKUntouched(t *testing.T) {
	s := newStream(t)
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"text":"\"mcpvisor-raw-1"}}`,               // the marker inside a result of the SDK's
		`{"jsonrpc":"2.0","id":"mcpvisor-raw-9","method":"roots/list"}`,               // a request from the server, whatever its id
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, // a notification
		`{"jsonrpc":"2.0","id":2,"result":{"big":"` + strings.Repeat("x", 200<<10) + `"}}`,
	}
	s.serverWrites(t, lines...)
	for _, want := range lines {
		require.Equal(t, want+"\n", <-s.sdk)
	}
}

func TestCallGetsItsAnswerAndTheSDKDoesNot(t *testing.T) {
	s := newStream(t)
	type out struct {
		res json.RawMessage
		err error
	}
	got := make(chan out, 1)
	go func() {
		res, err := s.c.Call(context.Background(), "tools/call", json.RawMessage(`{"name":"echo"}`), "")
		got <- out{res, err}
	}()
	req := s.request(t)
	require.Equal(t, "tools/call", req["method"])
	require.Equal(t, map[string]any{"name": "echo"}, req["params"])
	id := req["id"].(string)
	require.True(t, strings.HasPrefix(id, rawrpc.IDPrefix), id)
	// The answer's keys in any order, the SDK's line before it and after.
	s.serverWrites(t, `{"jsonrpc":"2.0","id":7,"result":{}}`,
		`{"result":{"content":[{"type":"text","text":"hi"}]},"jsonrpc":"2.0","id":"`+id+`"}`,
		`{"jsonrpc":"2.0","id":8,"result":{}}`)
	o := <-got
	require.NoError(t, o.err)
	require.JSONEq(t, `{"content":[{"type":"text","text":"hi"}]}`, string(o.res))
	require.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{}}`+"\n", <-s.sdk)
	require.Equal(t, `{"jsonrpc":"2.0","id":8,"result":{}}`+"\n", <-s.sdk)
}

// A line handed to the SDK is seen before an answer that came after it
// reaches its call, though the SDK has not read that far yet: what
// counts lines on it (the server's notifications) has counted it by the
// time the call returns.
func TestLinesAreSeenBeforeTheAnswerAfterThem(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	s := newStreamSeeing(t, func(line []byte) {
		mu.Lock()
		seen = append(seen, string(line))
		mu.Unlock()
	})
	got := make(chan error, 1)
	go func() {
		_, err := s.c.Call(context.Background(), "tools/call", nil, "")
		got <- err
	}()
	id := s.request(t)["id"].(string)
	note := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`
	s.serverWrites(t, note, `{"jsonrpc":"2.0","id":"`+id+`","result":{}}`)
	require.NoError(t, <-got)
	mu.Lock()
	require.Equal(t, []string{note + "\n"}, seen, "the answer is not seen; the line before it is")
	mu.Unlock()
	require.Equal(t, note+"\n", <-s.sdk)
}

func TestCallErrorAnswer(t *testing.T) {
	s := newStream(t)
	got := make(chan error, 1)
	go func() {
		_, err := s.c.Call(context.Background(), "tools/call", nil, "")
		got <- err
	}()
	id := s.request(t)["id"].(string)
	s.serverWrites(t, `{"jsonrpc":"2.0","id":"`+id+`","error":{"code":-32602,"message":"no such tool"}}`)
	var rpcErr *rawrpc.Error
	require.ErrorAs(t, <-got, &rpcErr)
	require.Equal(t, int64(-32602), rpcErr.Code)
	require.Equal(t, "no such tool", rpcErr.Message)
}

func TestCancelledCallTellsTheServerAndDropsTheLateAnswer(t *testing.T) {
	s := newStream(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("client left")
	got := make(chan error, 1)
	go func() {
		_, err := s.c.Call(ctx, "tools/call", nil, "the client left")
		got <- err
	}()
	id := s.request(t)["id"].(string)
	cancel(why)
	note := s.request(t)
	require.Equal(t, "notifications/cancelled", note["method"])
	require.Equal(t, map[string]any{"requestId": id, "reason": "the client left"}, note["params"])
	require.ErrorIs(t, <-got, why)
	s.serverWrites(t, `{"jsonrpc":"2.0","id":"`+id+`","result":{}}`, `{"jsonrpc":"2.0","id":3,"result":{}}`)
	require.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{}}`+"\n", <-s.sdk, "the late answer is not the SDK's")
}

func TestStreamEndFailsWaitingCalls(t *testing.T) {
	s := newStream(t)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() {
			_, err := s.c.Call(context.Background(), "tools/call", nil, "")
			errs <- err
		})
	}
	for range 3 {
		s.request(t)
	}
	require.NoError(t, s.out.Close())
	wg.Wait()
	for range 3 {
		err := <-errs
		require.ErrorIs(t, err, rawrpc.ErrClosed)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	}
	_, err := s.c.Call(context.Background(), "tools/call", nil, "")
	require.ErrorIs(t, err, rawrpc.ErrClosed, "a call after the end is refused at once")
}

// FuzzReader: whatever a server writes, the SDK reads it all but the
// answers to raw calls, byte for byte, and nothing panics.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"id":"mcpvisor-raw-1","result":{}}` + "\n"))
	f.Add([]byte(`{"id":"mcpvisor-raw-","result":1}` + "\nnot json \"mcpvisor-raw-x\n" + `{"id":"mcpvisor-raw-2","error":{"code":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := rawrpc.New(bytes.NewReader(data), io.Discard)
		got, err := io.ReadAll(c.Reader())
		require.NoError(t, err)
		var want []byte
		for line := range bytes.SplitAfterSeq(data, []byte("\n")) {
			if taken(line) {
				continue
			}
			want = append(want, line...)
		}
		require.Equal(t, string(want), string(got))
	})
}

// taken reports whether a line is a raw call's answer (whether or not a
// call waits for it), as the reader judges it.
func taken(line []byte) bool {
	if !bytes.HasSuffix(line, []byte("\n")) || !bytes.Contains(line, []byte(`"`+rawrpc.IDPrefix)) {
		return false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *rawrpc.Error   `json:"error"`
	}
	if json.Unmarshal(line, &msg) != nil || msg.Method != nil {
		return false
	}
	var id string
	return json.Unmarshal(msg.ID, &id) == nil && len(id) > len(rawrpc.IDPrefix) && strings.HasPrefix(id, rawrpc.IDPrefix)
}
