package proc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport is the transport of one spawned process. Connect hands the
// SDK the process's pipes; closing the SDK's connection stops the process.
type Transport struct {
	proc *Process
	raw  atomic.Pointer[rawrpc.Conn] // set by Connect
}

// NewTransport returns the transport over p's pipes.
func NewTransport(p *Process) *Transport { return &Transport{proc: p} }

// Process is the process under t.
func (t *Transport) Process() *Process { return t.proc }

// Raw is the raw call channel beside the SDK's connection (see package
// rawrpc), or nil before Connect.
func (t *Transport) Raw() *rawrpc.Conn { return t.raw.Load() }

func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	raw := rawrpc.New(t.proc.out, stdinWriter{t.proc})
	// Counted as the line is read, not as the SDK's decoder (which reads
	// ahead of what it hands on) gets to it: the answer to a raw call
	// that came after it must not find it uncounted.
	raw.Seeing(func(line []byte) {
		if rawrpc.IsNotice(line) {
			t.proc.noticesRead.Add(1)
		}
	})
	t.raw.Store(raw)
	pipes := &mcp.IOTransport{
		// Raw calls' answers are taken out of what the SDK reads, and its
		// writes share the stdin lock with theirs; closing is the
		// process's as before.
		Reader: struct {
			io.Reader
			io.Closer
		}{raw.Reader(), t.proc.out},
		Writer: struct {
			io.Writer
			io.Closer
		}{raw.Writer(), stdinWriter{t.proc}},
		// The process's reader enforces the frame cap on each line, and says
		// so by size. The SDK's cap counts what its decoder buffers (up to one
		// pipe read past the frame): set higher, it stays a backstop for a
		// frame spread over many lines.
		MaxLineLength: t.proc.out.maxLine + 1<<20,
	}
	c, err := pipes.Connect(context.Background())
	if err != nil {
		return nil, err
	}
	return &conn{Connection: c, proc: t.proc, raw: raw, log: t.proc.log, pending: map[jsonrpc.ID]string{}}, nil
}

// conn is the SDK's connection to a process, watched for what the SDK
// does not report: a read error that is the server's fault becomes a
// protocol error quoting the offending line, and responses that answer no
// request in flight (duplicate or unsolicited ids, which the SDK drops
// silently) are logged with the server's name.
type conn struct {
	mcp.Connection
	proc *Process
	raw  *rawrpc.Conn
	log  *slog.Logger

	mu sync.Mutex
	// mu guards the following.
	pending   map[jsonrpc.ID]string // our requests awaiting a response: id → method
	cancelled []jsonrpc.ID          // recently cancelled ids, whose late answers are expected
	strays    int                   // responses that matched nothing
}

// maxCancelled bounds the cancelled ids remembered per connection.
const maxCancelled = 64

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		err = c.proc.out.explain(err)
		var pe protocolError
		if errors.As(err, &pe) {
			// The SDK ends the session with this error and fails the
			// requests in flight with it.
			return nil, streamBroken{pe}
		}
		return nil, err
	}
	if m, ok := msg.(*jsonrpc.Response); ok {
		c.answered(m.ID)
	}
	return msg, nil
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.sent(req)
	}
	return c.Connection.Write(ctx, msg)
}

// ErrDisconnected is in the chain of the errors of requests whose session
// ended under them because the server broke the protocol: they may or may
// not have run.
var ErrDisconnected = errors.New("disconnected")

// streamBroken is a protocol error as the requests in flight see it: their
// session ended under them, so they may or may not have run
// (ErrDisconnected).
type streamBroken struct{ protocolError }

func (e streamBroken) Error() string {
	return e.protocolError.Error() + "; the session ended: it may or may not have run"
}

func (e streamBroken) Is(target error) bool { return target == ErrDisconnected }

func (e streamBroken) Unwrap() error { return e.protocolError }

// farewellWait bounds how long Close may spend telling the server about
// requests still pending: a server that does not read its stdin must not
// hold up the close.
const farewellWait = 100 * time.Millisecond

// Close tells the server to stop working on requests of ours it never
// answered, then closes the connection (and with it the process). The SDK
// sends notifications/cancelled for a call it abandons, but from a
// goroutine of its own after the call has returned, and not at all once
// the session is closing: the calls a disposal abandons would otherwise
// keep running on a server that may outlive the close.
func (c *conn) Close() error {
	c.mu.Lock()
	ids := make([]jsonrpc.ID, 0, len(c.pending))
	for id, method := range c.pending {
		if method != "initialize" { // which a client must not cancel (MCP lifecycle)
			ids = append(ids, id)
		}
	}
	clear(c.pending)
	c.mu.Unlock()
	alive := c.proc.ExitError() == nil
	if alive {
		_ = c.proc.stdin.SetWriteDeadline(time.Now().Add(farewellWait))
	}
	if c.raw != nil {
		c.raw.Close(ErrDisconnected, "the client closed the session")
	}
	if len(ids) > 0 && alive {
		ctx := context.Background()
		for _, id := range ids {
			params, err := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "the client closed the session"})
			if err != nil {
				break
			}
			if c.Connection.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params}) != nil {
				break
			}
		}
	}
	return c.Connection.Close()
}

// sent notes a request awaiting its response, or the cancellation of one.
func (c *conn) sent(req *jsonrpc.Request) {
	switch {
	case req.ID.IsValid():
		c.mu.Lock()
		c.pending[req.ID] = req.Method
		c.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			return
		}
		id, err := jsonrpc.MakeID(p.RequestID)
		if err != nil {
			return
		}
		c.mu.Lock()
		if _, ok := c.pending[id]; ok {
			delete(c.pending, id)
			if len(c.cancelled) == maxCancelled {
				c.cancelled = c.cancelled[1:]
			}
			c.cancelled = append(c.cancelled, id)
		}
		c.mu.Unlock()
	}
}

// answered checks a response against the requests in flight.
func (c *conn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	if _, ok := c.pending[id]; ok {
		delete(c.pending, id)
		c.mu.Unlock()
		return
	}
	if i := slices.Index(c.cancelled, id); i >= 0 {
		c.cancelled = slices.Delete(c.cancelled, i, i+1) // a late answer: dropped, as it should be
		c.mu.Unlock()
		return
	}
	c.strays++
	n := c.strays
	c.mu.Unlock()
	if n&(n-1) == 0 { // 1, 2, 4, 8 …: a stream of them does not flood the log
		c.log.Warn("protocol error: response to no request in flight (duplicate or unsolicited id); dropped",
			"server", c.proc.server, "id", id.Raw(), "count", n)
	}
}

// Close stops and reaps the process; see Process.Close.
func (t *Transport) Close() error { return t.proc.Close() }
