package proc

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// readerOver returns a stdoutReader over a pipe holding chunks, written
// one at a time so that each Read returns one chunk, as pipe reads do.
func readerOver(t *testing.T, maxLine int) (*stdoutReader, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return &stdoutReader{p: &Process{stdout: r, fromOut: r}, maxLine: maxLine}, w
}

// The quote of the line a JSON syntax error was found in: a server that
// prints a banner on stdout is told which line broke the protocol.
func TestStdoutReaderQuotesTheOffendingLine(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name   string
		chunks []string
		want   []string // the quote; where the reads fall decides between some
	}{
		{"banner first", []string{"Starting server...\n"}, []string{`"Starting server..."`}},
		{"after a frame, same read", []string{`{"jsonrpc":"2.0"}` + "\nnpm WARN deprecated\n"}, []string{`"npm WARN deprecated"`}},
		{"line split over reads", []string{"{}\nDebugger listen", "ing on ws://x\n"},
			[]string{`"Debugger listening on ws://x"`, `"Debugger listen"…`}},
		{"unterminated", []string{"oops"}, []string{`"oops"…`}},
		{"long line truncated", []string{long + "\n"}, []string{`"` + long[:quoteBytes] + `"…`}},
		{"crlf", []string{"oops\r\n"}, []string{`"oops"`}},
		// An error deep in a long line: its start is no longer kept.
		{"start no longer kept", []string{`{"a":"` + strings.Repeat("z", 5000) + `"x}` + "\n"}, []string{`…"` + strings.Repeat("z", quoteBytes) + `"…`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, w := readerOver(t, 1<<20)
			go func() {
				for _, c := range tt.chunks {
					w.Write([]byte(c))
				}
				w.Close()
			}()
			dec := json.NewDecoder(out)
			var err error
			for err == nil {
				var v json.RawMessage
				err = dec.Decode(&v)
			}
			var se *json.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("decode error %v, want a syntax error", err)
			}
			got := out.explain(err)
			var pe protocolError
			if !errors.As(got, &pe) {
				t.Fatalf("explain(%v) = %v, want a protocolError", err, got)
			}
			if !slices.Contains(tt.want, pe.line) {
				t.Errorf("quote %s, want one of %s", pe.line, tt.want)
			}
			if out.brokenProtocol() == nil {
				t.Error("the first protocol error is remembered")
			}
		})
	}
}

// The frame cap applies to each line, not to what a read happens to bring.
func TestStdoutReaderFrameCap(t *testing.T) {
	out, w := readerOver(t, 1024)
	go func() {
		for range 8 {
			w.Write([]byte(strings.Repeat("a", 1000) + "\n")) // 8000 bytes, no line over the cap
		}
		w.Write([]byte(strings.Repeat("b", 1025)))
		w.Close()
	}()
	buf := make([]byte, 64<<10)
	total := 0
	var err error
	for err == nil {
		var n int
		n, err = out.Read(buf)
		total += n
	}
	if total < 8000 {
		t.Errorf("read %d bytes before the error, want the 8000 of the short lines", total)
	}
	if err == io.EOF || err == nil || err.Error() != "protocol error: frame exceeded the maximum line length of 1024 bytes (max_frame_bytes)" {
		t.Fatalf("err = %v", err)
	}
	if _, again := out.Read(buf); again != err {
		t.Errorf("a later Read returns %v, want the same error", again)
	}
}

// The cap is reported even when the overlong line is the last output: the
// read that delivers the complete lines before it must not be followed by
// one that waits for more.
func TestStdoutReaderFrameCapWithoutMoreOutput(t *testing.T) {
	out, w := readerOver(t, 1024)
	w.Write([]byte("{}\n" + strings.Repeat("b", 1025))) // and then silence; w stays open
	buf := make([]byte, 64<<10)
	n, err := out.Read(buf)
	if n != 3 || err != nil {
		t.Fatalf("first Read = %d, %v; want the complete line", n, err)
	}
	if _, err := out.Read(buf); err == nil || !strings.Contains(err.Error(), "frame exceeded") {
		t.Fatalf("second Read: %v, want the cap", err)
	}
}
