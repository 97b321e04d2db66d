package proc

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/redact"
)

// A secret value in a stderr line longer than what is logged of it is
// never logged, wherever it sits: at the start, where the log cuts the
// line, or where a reader of the line in pieces would have started its
// next piece. The tail keeps everything for the exit error, hidden there
// by the tail itself.
func TestLongStderrLineHidesItsSecrets(t *testing.T) {
	const secret = "s3cr3t-value-0123456789"
	secrets := redact.New(map[string]string{"TOKEN": secret})
	positions := []int{0, 500, longLine + 1, 3 * longLine}
	for _, cut := range []int{longLine, 2 * longLine} { // every start near where a piece could end
		for at := cut - 2*len(secret) - 8; at <= cut+2; at++ {
			positions = append(positions, at)
		}
	}
	for _, at := range positions {
		line := strings.Repeat("x", at) + secret + strings.Repeat("y", 2*longLine) + "\nafter " + secret + "\n"
		var log bytes.Buffer
		lines := stderrLogger{logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})),
			server: "s", secrets: secrets}
		readLines(oneByteAtATime(strings.NewReader(line), 4096), io.Discard, &lines)
		if strings.Contains(log.String(), secret[1:]) || strings.Contains(log.String(), secret[:len(secret)-1]) {
			t.Errorf("secret at %d: logged: %q", at, log.String())
		}
		if !strings.Contains(log.String(), "after ${TOKEN}") {
			t.Errorf("secret at %d: the next line is not logged as it was, hidden: %q", at, log.String())
		}
	}
}

// oneByteAtATime reads r in reads of at most n bytes, as a pipe would
// hand over what a server writes.
func oneByteAtATime(r io.Reader, n int) io.Reader { return &chunked{r: r, n: n} }

type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }
