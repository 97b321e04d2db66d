package proc

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// scriptedConn is an mcp.Connection whose Read hands out msgs in order.
type scriptedConn struct {
	msgs []jsonrpc.Message
}

func (c *scriptedConn) Read(context.Context) (jsonrpc.Message, error) {
	if len(c.msgs) == 0 {
		return nil, io.EOF
	}
	m := c.msgs[0]
	c.msgs = c.msgs[1:]
	return m, nil
}
func (c *scriptedConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (c *scriptedConn) Close() error                                 { return nil }
func (c *scriptedConn) SessionID() string                            { return "" }

// Responses that answer no request in flight are logged with
// the server's name, sparsely; late answers to cancelled requests are not.
func TestStdioConnStrayResponses(t *testing.T) {
	id := func(n int64) jsonrpc.ID { return jsonrpc2ID(t, n) }
	resp := func(n int64) jsonrpc.Message { return &jsonrpc.Response{ID: id(n), Result: json.RawMessage(`{}`)} }
	var logs strings.Builder
	c := &conn{
		Connection: &scriptedConn{msgs: []jsonrpc.Message{
			resp(1),  // answers a request in flight
			resp(2),  // a late answer to a cancelled request
			resp(1),  // a duplicate: stray 1
			resp(99), // unsolicited: stray 2
			resp(99), // stray 3, not logged
		}},
		proc:    &Process{server: "git", out: &stdoutReader{}},
		log:     slog.New(slog.NewTextHandler(&logs, nil)),
		pending: map[jsonrpc.ID]string{},
	}
	ctx := context.Background()
	for _, n := range []int64{1, 2} {
		if err := c.Write(ctx, &jsonrpc.Request{ID: id(n), Method: "tools/call"}); err != nil {
			t.Fatal(err)
		}
	}
	cancel := &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":2}`)}
	if err := c.Write(ctx, cancel); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := logs.String()
	if n := strings.Count(got, "\n"); n != 2 {
		t.Errorf("%d log lines, want 2 (strays 1 and 2):\n%s", n, got)
	}
	for _, want := range []string{"server=git id=1 count=1", "server=git id=99 count=2"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}

func jsonrpc2ID(t *testing.T, n int64) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// recordingConn is an mcp.Connection that keeps what is written to it.
type recordingConn struct {
	scriptedConn
	written []jsonrpc.Message
	closed  bool
}

func (c *recordingConn) Write(_ context.Context, m jsonrpc.Message) error {
	c.written = append(c.written, m)
	return nil
}

func (c *recordingConn) Close() error {
	c.closed = true
	return nil
}

// Closing a stdio connection tells the server to cancel every
// request of ours still unanswered — but not initialize, which a client
// must not cancel — and then closes.
func TestStdioConnCloseCancelsPending(t *testing.T) {
	id := func(n int64) jsonrpc.ID { return jsonrpc2ID(t, n) }
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rec := &recordingConn{}
	c := &conn{
		Connection: rec,
		proc:       &Process{server: "x", stdin: w, toIn: w, out: &stdoutReader{}, exited: make(chan struct{})},
		log:        slog.New(slog.DiscardHandler),
		pending:    map[jsonrpc.ID]string{},
	}
	ctx := context.Background()
	for n, method := range map[int64]string{1: "initialize", 2: "tools/call", 3: "tools/call", 4: "ping"} {
		if err := c.Write(ctx, &jsonrpc.Request{ID: id(n), Method: method}); err != nil {
			t.Fatal(err)
		}
	}
	// 3 was cancelled by the SDK already; 4 was answered.
	if err := c.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":3}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := (&conn{Connection: &scriptedConn{msgs: []jsonrpc.Message{&jsonrpc.Response{ID: id(4), Result: json.RawMessage(`{}`)}}},
		proc: c.proc, log: c.log, pending: c.pending}).Read(ctx); err != nil {
		t.Fatal(err)
	}
	before := len(rec.written)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if !rec.closed {
		t.Error("the connection was not closed")
	}
	var cancelled []string
	for _, m := range rec.written[before:] {
		req, ok := m.(*jsonrpc.Request)
		if !ok || req.Method != "notifications/cancelled" {
			t.Fatalf("wrote %#v, want only notifications/cancelled", m)
		}
		cancelled = append(cancelled, string(req.Params))
	}
	want := []string{`{"reason":"the client closed the session","requestId":2}`}
	if strings.Join(cancelled, "|") != strings.Join(want, "|") {
		t.Errorf("cancelled %q, want %q", cancelled, want)
	}
}
