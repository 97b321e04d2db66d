package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// maxLine is the longest line a stdio client may send: one JSON-RPC
// message. A longer one is read to its end, dropped and answered.
const maxLine = 16 << 20

// headLen is how much of a line too long to keep is looked at to find
// its request id, so that the client's request is answered rather than
// left waiting.
const headLen = 64 << 10

// lineReader reads newline-delimited messages, each at most max bytes,
// from a client that may send anything: a line longer than max is read
// to its end without being kept (a 100 MB line costs max bytes, not 100
// MB) and reported as such. It is owned by one goroutine.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte // the line being read, reused from line to line
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// line is one line read: its bytes without the line ending, or, when it
// was longer than the limit, its head.
type line struct {
	data    []byte // valid until the next read
	tooLong bool
}

// next returns the next line. The last line may lack its newline; after
// it, next returns io.EOF.
func (lr *lineReader) next() (line, error) {
	if cap(lr.buf) > 1<<20 {
		lr.buf = nil // a long line's room is not kept for the session
	}
	lr.buf = lr.buf[:0]
	read, tooLong := false, false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		read = read || len(chunk) > 0
		if !tooLong {
			lr.buf = append(lr.buf, chunk...)
			if len(lr.buf) > lr.max+1 { // +1: the newline is not part of the line
				tooLong = true
				lr.buf = lr.buf[:min(len(lr.buf), headLen)]
			}
		}
		switch {
		case err == nil: // the newline
			return lr.finish(tooLong), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && read:
			return lr.finish(tooLong), nil
		default:
			return line{}, err
		}
	}
}

func (lr *lineReader) finish(tooLong bool) line {
	data := lr.buf
	if !tooLong {
		data = bytes.TrimSuffix(data, []byte("\n"))
		data = bytes.TrimSuffix(data, []byte("\r"))
		if len(data) > lr.max { // the last line, without its newline
			tooLong, data = true, data[:min(len(data), headLen)]
		}
	}
	return line{data: data, tooLong: tooLong}
}

// requestID finds the "id" member of a JSON object from the beginning of
// its text, which may be cut short or broken further on, and returns it
// as JSON (a number or a string), or nil when it is not there before the
// text ends or breaks. Only the object's own members are looked at.
func requestID(head []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		name, ok := key.(string)
		if !ok {
			return nil // the object's end, or not an object
		}
		if name != "id" {
			if skipValue(dec) != nil {
				return nil
			}
			continue
		}
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		switch v := tok.(type) {
		case json.Number:
			return json.RawMessage(v.String())
		case string:
			b, _ := json.Marshal(v)
			return b
		}
		return nil
	}
}

// skipValue reads one value, however nested, token by token (no
// recursion: a deeply nested value costs no stack).
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
