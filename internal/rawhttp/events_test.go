package rawhttp

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// readAll is every event of stream, and the error that ended it.
func readAll(stream string, max int) ([]event, error) {
	er := newEventReader(strings.NewReader(stream), max)
	var out []event
	for {
		ev, err := er.next()
		if err != nil {
			return out, err
		}
		out = append(out, ev)
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
		{"cut in an event", "data: x\n", nil, io.ErrUnexpectedEOF},
		{"cut in a line", "data: x", nil, io.ErrUnexpectedEOF},
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
// ends with EOF, a cut stream or a too-large event.
func FuzzEvents(f *testing.F) {
	f.Add("data: {\"jsonrpc\":\"2.0\"}\n\n", 64)
	f.Add("event: message\r\nid: 1\r\ndata: a\r\ndata: b\r\n\r\n: c\n\n", 8)
	f.Add("data\n\ndata:\n\n", 0)
	f.Fuzz(func(t *testing.T, stream string, max int) {
		if max < 0 || max > 1<<16 {
			max = 0
		}
		evs, err := readAll(stream, max)
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
