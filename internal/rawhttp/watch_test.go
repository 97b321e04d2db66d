package rawhttp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// watchAll reads stream through Watch in reads of at most chunk bytes
// from a body handing out at most piece bytes at a time. It checks, after
// each read, that every message event complete in what was handed on so
// far (up to an event over max) had been seen, and returns what was handed on, what was seen and the
// error that ended the reading.
func watchAll(t *testing.T, stream string, max, piece, chunk int) (string, []string, error) {
	t.Helper()
	var seen []string
	body := io.NopCloser(&pieces{r: strings.NewReader(stream), n: piece})
	w := Watch(body, max, func(data []byte) { seen = append(seen, string(data)) })
	var got []byte
	p := make([]byte, chunk)
	for {
		n, err := w.Read(p)
		got = append(got, p[:n]...)
		ended := got
		if err == nil { // only events a blank line has ended are complete
			ended = throughBlankLine(got)
		}
		if complete := messages(ended, max); len(complete) > len(seen) {
			t.Fatalf("handed on %q with %d messages, of which %d were seen", got, len(complete), len(seen))
		}
		if err != nil {
			return string(got), seen, err
		}
	}
}

// throughBlankLine is stream up to the end of its last blank line.
func throughBlankLine(stream []byte) []byte {
	end := 0
	if i := bytes.LastIndex(stream, []byte("\n\n")); i >= 0 {
		end = i + 2
	}
	if i := bytes.LastIndex(stream, []byte("\n\r\n")); i >= 0 && i+3 > end {
		end = i + 3
	}
	return stream[:end]
}

// messages are the data of the message events in stream, up to the first
// over max bytes; the stream's end ends its last event.
func messages(stream []byte, max int) []string {
	er := newEventReader(bytes.NewReader(stream), max)
	var out []string
	for {
		ev, err := er.next()
		if err != nil {
			return out
		}
		if ev.name == "" || ev.name == "message" {
			out = append(out, string(ev.data))
		}
	}
}

// pieces hands out at most n bytes a read.
type pieces struct {
	r io.Reader
	n int
}

func (p *pieces) Read(b []byte) (int, error) { return p.r.Read(b[:min(len(b), p.n)]) }

// A watched stream is handed on unchanged, however it is cut into reads,
// and each message event in it is seen before anything after it is
// handed on; events of another name are not seen.
func TestWatch(t *testing.T) {
	stream := "id: 1\ndata: {\"method\":\"notifications/message\"}\n\n" +
		": a comment\n\nevent: other\ndata: skipped\n\n" +
		"event: message\r\ndata: a\r\ndata: b\r\n\r\n" +
		"data: {\"id\":1,\"result\":{}}\n\n"
	want := []string{`{"method":"notifications/message"}`, "a\nb", `{"id":1,"result":{}}`}
	for _, piece := range []int{1, 3, 7, 4096} {
		for _, chunk := range []int{1, 5, 512} {
			got, seen, err := watchAll(t, stream, 0, piece, chunk)
			require.ErrorIs(t, err, io.EOF)
			require.Equal(t, stream, got, "piece %d chunk %d", piece, chunk)
			require.Equal(t, want, seen, "piece %d chunk %d", piece, chunk)
		}
	}
}

// An event over the bound ends the watching: it and what follows are
// handed on unchanged and unseen, and the body's end is the reader's.
func TestWatchEventOverTheBound(t *testing.T) {
	stream := "data: small\n\ndata: " + strings.Repeat("x", 100) + "\n\ndata: after\n\n"
	got, seen, err := watchAll(t, stream, 64, 16, 16)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, stream, got)
	require.Equal(t, []string{"small"}, seen)
}

// A body that fails hands on every byte it gave, then its error, as the
// reader would have had them without the watching.
func TestWatchBodyError(t *testing.T) {
	boom := errors.New("connection reset")
	stream := "data: one\n\ndata: cut"
	var seen []string
	w := Watch(io.NopCloser(io.MultiReader(strings.NewReader(stream), iotest.ErrReader(boom))), 0,
		func(data []byte) { seen = append(seen, string(data)) })
	got, err := io.ReadAll(w)
	require.ErrorIs(t, err, boom)
	require.Equal(t, stream, string(got))
	require.Equal(t, []string{"one"}, seen)
}

// FuzzWatch reads what a server sends on a response stream through Watch:
// it never panics, hands on every byte unchanged, and has seen every
// message complete in what it handed on whenever a read returns.
func FuzzWatch(f *testing.F) {
	f.Add("data: {\"jsonrpc\":\"2.0\"}\n\n", 64, 3, 5)
	f.Add("event: message\r\nid: 1\r\ndata: a\r\ndata: b\r\n\r\n: c\n\n", 8, 1, 1)
	f.Add("data\n\ndata:\n\nevent: x\ndata: y\n\n", 0, 4096, 2)
	f.Fuzz(func(t *testing.T, stream string, max, piece, chunk int) {
		if max < 0 || max > 1<<16 {
			max = 0
		}
		piece, chunk = 1+abs(piece)%64, 1+abs(chunk)%64
		got, _, err := watchAll(t, stream, max, piece, chunk)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("ended with %v", err)
		}
		if got != stream {
			t.Fatalf("handed on %q, not %q", got, stream)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// BenchmarkWatch is what watching costs one call's response stream as
// the go-sdk reads it (bufio reads of 4 KiB): a result alone, and a
// result after three log messages, each beside reading it unwatched.
func BenchmarkWatch(b *testing.B) {
	notice := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"working\"}}\n\n"
	result := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"done\"}]}}\n\n"
	for name, stream := range map[string]string{"result": result, "3 logs+result": strings.Repeat(notice, 3) + result} {
		for _, watch := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/watched=%v", name, watch), func(b *testing.B) {
				p := make([]byte, 4096)
				b.ReportAllocs()
				for b.Loop() {
					var body io.ReadCloser = io.NopCloser(strings.NewReader(stream))
					if watch {
						body = Watch(body, 0, func([]byte) {})
					}
					for {
						if _, err := body.Read(p); err != nil {
							break
						}
					}
				}
			})
		}
	}
}
