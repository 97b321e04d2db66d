package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is the gateway's end of a stdio client: newline-delimited
// JSON-RPC like the SDK's own IOTransport, except that what the client
// sends cannot end the session. A line that is not JSON is answered with
// a parse error, one that is not a JSON-RPC message (or a batch, or longer
// than the limit) with an invalid request error, and the session goes on;
// only the end of the input ends it.
type stdioTransport struct {
	r   io.ReadCloser
	w   io.WriteCloser
	max int // the longest line; if zero, maxLine
	// fast, if set, serves the calls the fast path can (stdiofast.go).
	fast *stdioFast
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.max
	if limit <= 0 {
		limit = maxLine
	}
	c := &stdioConn{r: t.r, w: t.w, fast: t.fast, incoming: make(chan readResult), closed: make(chan struct{}),
		turn: make(chan *lineReader), waiter: make(chan struct{}, 1)}
	go c.read(newLineReader(t.r, limit))
	return c, nil
}

// stdioConn is one stdio session. One goroutine at a time reads the
// lines (a read of stdin cannot be interrupted: Read selects on what it
// hands over) and answers those it refuses; writes, its answers and the
// SDK's, go out one whole line at a time.
type stdioConn struct {
	r        io.ReadCloser
	w        io.WriteCloser
	fast     *stdioFast // nil: every line goes to the go-sdk
	incoming chan readResult
	// The reading passes from goroutine to goroutine (see read): turn
	// hands it to the one goroutine that may wait for it, the holder of
	// waiter's one place.
	turn   chan *lineReader
	waiter chan struct{}

	writeMu sync.Mutex // guards writes to w

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

// read hands over each message the client sends, answering what it
// refuses, until the input ends (or fails) or the connection is closed.
func (c *stdioConn) read(lr *lineReader) {
	for {
		l, err := lr.next()
		if err != nil {
			select {
			case c.incoming <- readResult{err: err}:
			case <-c.closed:
			}
			return
		}
		if c.fast != nil && !l.tooLong {
			if taken, run := c.fast.take(c, l.data); taken {
				if run == nil {
					continue
				}
				// This goroutine makes the call and another reads on: the
				// call's request goes upstream without waiting for a
				// goroutine to be scheduled. Once the call is answered,
				// this one waits to read in turn.
				c.passOn(lr)
				run()
				if lr = c.awaitTurn(); lr == nil {
					return
				}
				continue
			}
		}
		msg, refusal := decodeLine(l)
		if refusal != nil {
			if err := c.writeLine(refusal); err != nil {
				select {
				case c.incoming <- readResult{err: err}:
				case <-c.closed:
				}
				return
			}
			continue
		}
		if msg == nil {
			continue // a blank line
		}
		select {
		case c.incoming <- readResult{msg: msg}:
		case <-c.closed:
			return
		}
	}
}

// passOn gives the reading of lr to the goroutine waiting for its turn,
// or to a new one if none is.
func (c *stdioConn) passOn(lr *lineReader) {
	select {
	case c.turn <- lr:
	default:
		go c.read(lr)
	}
}

// awaitTurn waits until a reader passes the reading on, and returns what
// to read; nil if another goroutine waits already, or the connection is
// closed. One goroutine waiting, its stack grown by the calls it made,
// spares a call a new goroutine and its stack's growth.
func (c *stdioConn) awaitTurn() *lineReader {
	select {
	case c.waiter <- struct{}{}:
	default:
		return nil
	}
	defer func() { <-c.waiter }()
	select {
	case lr := <-c.turn:
		return lr
	case <-c.closed:
		return nil
	}
}

// handOver gives the go-sdk a line the fast path took and then could not
// serve, from the goroutine that tried.
func (c *stdioConn) handOver(data []byte) {
	msg, refusal := decodeLine(line{data: data})
	switch {
	case refusal != nil:
		_ = c.writeLine(refusal)
	case msg != nil:
		select {
		case c.incoming <- readResult{msg: msg}:
		case <-c.closed:
		}
	}
}

// decodeLine is the message a line holds, or the error response that
// refuses it (nil for both: a blank line, which is skipped).
func decodeLine(l line) (jsonrpc.Message, []byte) {
	data := bytes.TrimSpace(l.data)
	if l.tooLong {
		return nil, refusal(requestID(data), jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("invalid request: the message is longer than the %d MiB a line may hold, so it was not read; send a smaller request", maxLine>>20))
	}
	if len(data) == 0 {
		return nil, nil
	}
	if !json.Valid(data) {
		return nil, refusal(requestID(data), jsonrpc.CodeParseError,
			"parse error: the line is not valid JSON; each line must hold one whole JSON-RPC message")
	}
	if data[0] == '[' {
		return nil, refusal(nil, jsonrpc.CodeInvalidRequest,
			"invalid request: batches are not supported; send one JSON-RPC message per line")
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, refusal(requestID(data), jsonrpc.CodeInvalidRequest,
			"invalid request: the line is JSON but not a JSON-RPC 2.0 message ("+err.Error()+")")
	}
	return msg, nil
}

// refusal is the error response to a line that could not be taken, with
// the request's id when it could be found (else null).
func refusal(id json.RawMessage, code int, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: int64(code), Message: message}})
	return b
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message for the client: %w", err)
	}
	return c.writeLine(data)
}

// send writes msg, one JSON-RPC message, as a line (see writeLine).
func (c *stdioConn) send(msg []byte) error { return c.writeLine(msg) }

// writeLine writes data and a newline as one write.
func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		rerr := c.r.Close()
		werr := c.w.Close()
		if rerr != nil {
			c.closeErr = rerr
		} else {
			c.closeErr = werr
		}
	})
	return c.closeErr
}

func (c *stdioConn) SessionID() string { return "" }
