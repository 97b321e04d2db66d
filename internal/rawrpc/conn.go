package rawrpc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// IDPrefix starts the id of every request a Conn sends.
const IDPrefix = "mcpvisor-raw-"

// marker is how a line that may answer a raw call is told from others
// before anything is decoded: the id's opening quote and prefix.
var marker = []byte(`"` + IDPrefix)

// ErrClosed is in the chain of a call's error when the stream ended
// before the answer came; the call may or may not have run.
var ErrClosed = errors.New("the stream ended")

// Error is a JSON-RPC error the server answered a call with.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (JSON-RPC error %d)", e.Message, e.Code) }

// answer is what the reader delivers to a waiting call.
type answer struct {
	result json.RawMessage
	err    error
}

// Conn is the raw call channel over one stream; see the package doc.
type Conn struct {
	in *bufio.Reader
	w  io.Writer

	writeMu sync.Mutex // writeMu guards writes to w: one whole line each

	mu sync.Mutex
	// mu guards the following.
	waiting map[string]chan answer // calls awaiting their answer, by id
	seq     uint64                 // the last id's number
	ended   error                  // why the stream ended; nil while it runs

	// Owned by the reader's goroutine.
	rest []byte // what is left of a line being handed to the SDK
	long []byte // a line longer than the buffer, being gathered
	seen func(line []byte)
}

// Seeing has seen called with each line handed to the SDK, on the
// reader's goroutine, before the next line is read: what counts on it has
// counted a line before any answer that came after it reaches its call,
// whenever the SDK's decoder gets to the line. It is set before the SDK
// reads.
func (c *Conn) Seeing(seen func(line []byte)) { c.seen = seen }

// New returns the channel over a stream read from r and written to w.
// Everything the SDK reads must come from [Conn.Reader] and everything it
// writes go through [Conn.Writer].
func New(r io.Reader, w io.Writer) *Conn {
	return &Conn{in: bufio.NewReaderSize(r, 64<<10), w: w, waiting: map[string]chan answer{}}
}

// Reader is the stream as the SDK reads it: every line but the answers
// to raw calls.
func (c *Conn) Reader() io.Reader { return sdkReader{c} }

// Writer is the stream as the SDK writes it; each Write must be whole
// lines (the SDK writes one message and its newline per Write).
func (c *Conn) Writer() io.Writer { return sdkWriter{c} }

type sdkReader struct{ c *Conn }

func (r sdkReader) Read(p []byte) (int, error) { return r.c.read(p) }

type sdkWriter struct{ c *Conn }

func (w sdkWriter) Write(p []byte) (int, error) {
	w.c.writeMu.Lock()
	defer w.c.writeMu.Unlock()
	return w.c.w.Write(p)
}

// read fills p with the next bytes of lines meant for the SDK, taking
// the answers of raw calls out on the way.
func (c *Conn) read(p []byte) (int, error) {
	for len(c.rest) == 0 {
		line, err := c.in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			c.long = append(c.long, line...)
			continue
		}
		if c.long != nil {
			line = append(c.long, line...)
			c.long = nil
		}
		if err != nil {
			// A last line without its newline still goes to the SDK,
			// which reports what is wrong with it.
			_ = c.end(err)
			if len(line) > 0 {
				c.rest = line
				break
			}
			return 0, err
		}
		if !c.deliver(line) {
			c.rest = line
			if c.seen != nil {
				c.seen(line)
			}
		}
	}
	n := copy(p, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

// deliver hands line to the call it answers, if it answers a raw call,
// and reports whether it did. An answer to a call no longer waiting (it
// was cancelled) is dropped.
func (c *Conn) deliver(line []byte) bool {
	if !bytes.Contains(line, marker) {
		return false
	}
	a, ok := readAnswer(line)
	if !ok || len(a.ID) <= len(IDPrefix) || a.ID[:len(IDPrefix)] != IDPrefix {
		return false
	}
	c.mu.Lock()
	ch := c.waiting[a.ID]
	delete(c.waiting, a.ID)
	c.mu.Unlock()
	if ch == nil {
		return true
	}
	switch {
	case a.Error != nil:
		ch <- answer{err: a.Error}
	case a.Result == nil:
		ch <- answer{err: errors.New("the server's answer has neither a result nor an error")}
	default:
		ch <- answer{result: a.Result}
	}
	return true
}

// end records why the stream ended and fails the calls waiting; it
// returns their ids.
func (c *Conn) end(why error) []string {
	if errors.Is(why, io.EOF) {
		why = io.ErrUnexpectedEOF // for a call waiting, the answer was cut off
	}
	c.mu.Lock()
	if c.ended != nil {
		c.mu.Unlock()
		return nil
	}
	c.ended = fmt.Errorf("%w: %w", ErrClosed, why)
	waiting := c.waiting
	c.waiting = map[string]chan answer{}
	ended := c.ended
	c.mu.Unlock()
	ids := make([]string, 0, len(waiting))
	for id, ch := range waiting {
		ch <- answer{err: ended}
		ids = append(ids, id)
	}
	return ids
}

// Close fails the calls waiting, and refuses new ones, with why. The
// server is told to stop working on the calls it had not answered, with
// reason (the stream is still open: closing it is the owner's business,
// and so is bounding how long these writes may take).
func (c *Conn) Close(why error, reason string) {
	for _, id := range c.end(why) {
		if c.cancelled(id, reason) != nil {
			return
		}
	}
}

// cancelled tells the server that the call id is cancelled.
func (c *Conn) cancelled(id, reason string) error {
	note, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": reason}})
	if err != nil {
		return err
	}
	return c.writeLine(append(note, '\n'))
}

// Call sends a request of method with params (a JSON object, or nil) and
// returns the result the server answered with, raw. A JSON-RPC error
// answer is returned as an *Error. If ctx ends first, the server is told
// the request is cancelled, with reason, and ctx's cause is returned.
func (c *Conn) Call(ctx context.Context, method string, params json.RawMessage, reason string) (json.RawMessage, error) {
	ch := make(chan answer, 1)
	c.mu.Lock()
	if c.ended != nil {
		err := c.ended
		c.mu.Unlock()
		return nil, err
	}
	c.seq++
	id := IDPrefix + strconv.FormatUint(c.seq, 36)
	c.waiting[id] = ch
	c.mu.Unlock()

	line := make([]byte, 0, 64+len(method)+len(params))
	line = append(line, `{"jsonrpc":"2.0","id":"`...)
	line = append(line, id...)
	line = append(line, `","method":`...)
	line = strconv.AppendQuote(line, method)
	if len(params) > 0 {
		line = append(line, `,"params":`...)
		line = append(line, params...)
	}
	line = append(line, "}\n"...)
	if err := c.writeLine(line); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("%w: %w", ErrClosed, err)
	}
	select {
	case a := <-ch:
		return a.result, a.err
	case <-ctx.Done():
	}
	if !c.forget(id) {
		a := <-ch // answered (or the stream ended) meanwhile
		return a.result, a.err
	}
	_ = c.cancelled(id, reason)
	return nil, context.Cause(ctx)
}

// forget stops waiting for id, and reports whether it was still waited for.
func (c *Conn) forget(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.waiting[id]; !ok {
		return false
	}
	delete(c.waiting, id)
	return true
}

func (c *Conn) writeLine(line []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(line)
	return err
}
