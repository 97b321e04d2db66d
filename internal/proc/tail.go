package proc

import (
	"strings"
	"sync"

	"github.com/mcpvisor/mcpvisor/internal/redact"
)

// tailBuffer keeps the last max bytes written to it: a bounded record of a
// server's stderr to show when it dies.
type tailBuffer struct {
	max     int
	secrets *redact.Secrets // hidden in what is shown

	mu sync.Mutex
	// mu guards buf and cut.
	buf []byte
	cut bool // bytes before buf were dropped: its first line is partial
}

func newTailBuffer(max int, secrets *redact.Secrets) *tailBuffer {
	return &tailBuffer{max: max, secrets: secrets}
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(b) >= t.max {
		t.buf = append(t.buf[:0], b[len(b)-t.max:]...)
		t.cut = true
		return len(b), nil
	}
	if over := len(t.buf) + len(b) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.cut = true
	}
	t.buf = append(t.buf, b...)
	return len(b), nil
}

// LastLines returns up to n of the last non-empty lines joined by " | ",
// shortened to at most maxBytes from the end, with the secrets hidden
// before anything is cut (a cut through a value would show part of it).
// A first line whose start was dropped is left out for the same reason.
func (t *tailBuffer) LastLines(n, maxBytes int) string {
	s := strings.Join(t.lines(n, true), " | ")
	if len(s) > maxBytes {
		s = "…" + s[len(s)-maxBytes:]
	}
	return s
}

// Text returns up to n of the last non-empty lines as they were written
// (indentation kept), one a line, with the secrets hidden; a first line
// whose start was dropped is left out.
func (t *tailBuffer) Text(n int) string {
	return strings.Join(t.lines(n, false), "\n")
}

// lines are up to n of the last non-empty lines, redacted, trimmed of
// space on both sides or (trim false) only on the right.
func (t *tailBuffer) lines(n int, trim bool) []string {
	t.mu.Lock()
	text, cut := string(t.buf), t.cut
	t.mu.Unlock()
	if cut {
		_, text, _ = strings.Cut(text, "\n")
	}
	text = t.secrets.String(text)
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if trim {
			l = strings.TrimSpace(l)
		} else {
			l = strings.TrimRight(l, " \t\r")
		}
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
