package rawhttp

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
)

// readAll is every event of stream, and the error that ended it.
func readAll(stream string, max int) ([]event, error) {
	evs, _, err := readAllFrom(stream, max)
	return evs, err
}

// readAllFrom is readAll with the reader, for what it kept of the stream.
func readAllFrom(stream string, max int) ([]event, *eventReader, error) {
	er := newEventReader(strings.NewReader(stream), max)
	var out []event
	for {
		ev, err := er.next()
		if err != nil {
			return out, er, err
		}
		out = append(out, ev)
	}
}

// A stream whose reading fails mid-event (a connection cut) ends with
// that error, without the event it was in.
func TestEventReaderCut(t *testing.T) {
	er := newEventReader(io.MultiReader(strings.NewReader("id: 1\ndata: a\n\nid: 2\ndata: b\n"), iotest.ErrReader(io.ErrUnexpectedEOF)), 0)
	ev, err := er.next()
	require.NoError(t, err)
	require.Equal(t, "a", string(ev.data))
	_, err = er.next()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Equal(t, "1", er.lastID, "resumed after the last whole event")
}

// A stream's last event id (of an event with data or not) and retry
// delay are kept for its resumption; so is that of an event the stream
// ends in, as the go-sdk reads it.
func TestEventReaderKeepsResumption(t *testing.T) {
	tests := []struct {
		stream string
		id     string
		retry  time.Duration
	}{
		{"id: 1\ndata: a\n\nid: 2\n\n", "2", 0},
		{"retry: 1500\nid: 7\ndata: a\n\ndata: b\n\n", "7", 1500 * time.Millisecond},
		{"id: 1\n\nid: 2\ndata: ended", "2", 0},
		{"retry: soon\ndata: a\n\n", "", 0},
	}
	for _, tt := range tests {
		_, er, _ := readAllFrom(tt.stream, 0)
		require.Equal(t, tt.id, er.lastID, tt.stream)
		require.Equal(t, tt.retry, er.retry, tt.stream)
	}
}

// A response stream is read as a browser reads one: events end at a
// blank line, data lines join with newlines, comments and events without
// data are skipped, any line ending is one.
func TestEventReader(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []event
		end    error
	}{
		{"one", "data: {\"a\":1}\n\n", []event{{data: []byte(`{"a":1}`)}}, io.EOF},
		{"named, with an id, CRLF", "event: message\r\nid: 7\r\ndata: x\r\n\r\n", []event{{name: "message", id: "7", data: []byte("x")}}, io.EOF},
		{"joined data", "data: a\ndata:b\n\n", []event{{data: []byte("a\nb")}}, io.EOF},
		{"comment and priming event skipped", ": hi\n\nid: 1\n\ndata: y\n\n", []event{{data: []byte("y")}}, io.EOF},
		{"ends in an event", "data: x\n", []event{{data: []byte("x")}}, io.EOF},
		{"ends in a line", "id: 3\ndata: x", []event{{id: "3", data: []byte("x")}}, io.EOF},
		{"ends in an event without data", "data: x\n\nid: 4", []event{{data: []byte("x")}}, io.EOF},
		{"empty", "", nil, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(tt.stream, 0)
			require.ErrorIs(t, err, tt.end)
			require.Equal(t, tt.want, got)
		})
	}
}

// An event larger than the bound ends the stream with ErrEventTooLarge,
// whether its data comes in one line or many.
func TestEventReaderBound(t *testing.T) {
	for _, stream := range []string{
		"data: " + strings.Repeat("x", 100) + "\n\n",
		strings.Repeat("data: xxxxxxxxxx\n", 20) + "\n",
	} {
		_, err := readAll(stream, 64)
		require.ErrorIs(t, err, ErrEventTooLarge)
	}
	got, err := readAll("data: "+strings.Repeat("x", 64)+"\n\n", 64)
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, got, 1)
}

// FuzzEvents reads what a server sends on a response stream: it never
// panics, never returns an event without data or over the bound, and
// ends with EOF, a cut stream or a too-large event; the id it would
// resume from is one line, the retry delay not negative.
func FuzzEvents(f *testing.F) {
	f.Add("data: {\"jsonrpc\":\"2.0\"}\n\n", 64)
	f.Add("event: message\r\nid: 1\r\ndata: a\r\ndata: b\r\n\r\n: c\n\n", 8)
	f.Add("data\n\ndata:\n\n", 0)
	f.Add("retry: 10\nid: e1\n\nid: e2\ndata: x\n\n", 16)
	f.Fuzz(func(t *testing.T, stream string, max int) {
		if max < 0 || max > 1<<16 {
			max = 0
		}
		evs, er, err := readAllFrom(stream, max)
		if strings.ContainsAny(er.lastID, "\n") || er.retry < 0 {
			t.Fatalf("resumes from %q after %s", er.lastID, er.retry)
		}
		for _, ev := range evs {
			if max > 0 && len(ev.data) > max {
				t.Fatalf("event of %d bytes over the bound %d", len(ev.data), max)
			}
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrEventTooLarge) {
			t.Fatalf("ended with %v", err)
		}
	})
}
