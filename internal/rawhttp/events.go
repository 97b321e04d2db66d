package rawhttp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// event is one server-sent event.
type event struct {
	name string
	id   string
	data []byte
}

// ErrEventTooLarge is in the chain of the error of a stream with an event
// larger than the bound it is read with.
var ErrEventTooLarge = errors.New("event too large")

// eventReader reads server-sent events (the WHATWG event stream format)
// from a response body.
type eventReader struct {
	r   *bufio.Reader
	max int // bound on one event's data; no bound if <= 0
	buf []byte
	// lastID is the id of the last event dispatched that had one, with
	// data or without (a priming event): where a cut stream resumes.
	lastID string
	// retry is the reconnection delay the stream asked for last (its
	// retry: field), zero if it asked none.
	retry time.Duration
}

func newEventReader(r io.Reader, max int) *eventReader {
	return &eventReader{r: bufio.NewReaderSize(r, 4096), max: max}
}

// next returns the next event that carries data, or io.EOF once the
// stream ends. As the go-sdk reads a stream, an event the stream ends in
// (without the blank line that would end it) still counts. A stream whose
// reading fails (a connection cut mid-body) ends with that error, the
// event it was in lost.
func (er *eventReader) next() (event, error) {
	var ev event
	var data []byte
	started, hasData := false, false
	for {
		line, err := er.line()
		if err == io.EOF && started {
			line, err = nil, nil // the stream's end ends its last event
		}
		if err != nil {
			return event{}, err
		}
		if len(line) == 0 { // the blank line that ends an event
			if ev.id != "" {
				er.lastID = ev.id
			}
			if hasData {
				ev.data = data
				return ev, nil
			}
			ev, data, started, hasData = event{}, nil, false, false
			continue
		}
		started = true
		if line[0] == ':' {
			continue // a comment
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "id":
			ev.id = string(value)
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				er.retry = time.Duration(ms) * time.Millisecond
			}
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			hasData = true
			if er.max > 0 && len(data) > er.max {
				return event{}, fmt.Errorf("%w: over %d bytes", ErrEventTooLarge, er.max)
			}
		}
	}
}

// line reads one line without its ending (LF, CRLF or CR before LF, or
// the end of the stream).
func (er *eventReader) line() ([]byte, error) {
	er.buf = er.buf[:0]
	for {
		chunk, err := er.r.ReadSlice('\n')
		er.buf = append(er.buf, chunk...)
		if er.max > 0 && len(er.buf) > er.max+64 {
			return nil, fmt.Errorf("%w: a line over %d bytes", ErrEventTooLarge, er.max)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(er.buf, []byte("\n")), []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(er.buf) > 0:
			return bytes.TrimSuffix(er.buf, []byte("\r")), nil // the next read is io.EOF
		default:
			return nil, err
		}
	}
}
