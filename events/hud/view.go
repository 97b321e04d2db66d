package hud

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/textsafe"
)

// maxErrorRunes bounds Row.Error; a display truncates it further to fit.
const maxErrorRunes = 300

// Row is one server as the HUD shows it at one instant.
type Row struct {
	Name      string
	State     State
	Glyph     string // State.Glyph()
	Transport string // "stdio", "http", "sse", or "" if the model missed added
	Tools     int
	// Tokens estimates what the tools' definitions cost a model on every
	// turn they are listed ([Model.SetTokens]); zero when not counted.
	Tokens int
	// Latency is the moving average of the durations of the requests
	// that reached the server (manager.Metrics); zero before the first.
	Latency time.Duration
	// Calls counts the requests that reached the server (tool calls,
	// resource reads, prompt gets), leaving out those their caller gave up
	// on; FailedCalls those that failed (an error result, a timeout, a
	// lost session, a protocol error). Both come from manager.Metrics, as
	// of the last [Model.UpdateMetrics].
	Calls, FailedCalls int
	// Attempt is the connection attempt in progress (connecting), the one
	// the retry will make (backoff), or how many were made (failed); 0
	// when connected.
	Attempt int
	// Probe marks a connecting attempt that is the circuit's half-open probe.
	Probe bool
	// RetryIn is how long until the next attempt, in backoff (never negative:
	// zero once it is due).
	RetryIn time.Duration
	Circuit Circuit
	// ProbeIn is how long until the half-open probe, while the circuit is
	// open (zero once it is due).
	ProbeIn time.Duration
	// Error is the last error on one line, cleared by a successful connect.
	Error string
	// Waiting, while connecting, is what the attempt waits for before it
	// starts ("max connections (2) reached").
	Waiting string
	// Sessions is how many clients hold a session of their own on a
	// per-client server.
	Sessions int
}

// View returns a row per server, sorted by name, with countdowns computed
// against now.
func (m *Model) View(now time.Time) []Row {
	rows := make([]Row, 0, len(m.servers))
	for _, s := range m.servers {
		r := Row{
			Name:        s.name,
			State:       s.state,
			Glyph:       s.state.Glyph(),
			Transport:   s.transport,
			Tools:       s.tools,
			Tokens:      s.tokens,
			Latency:     time.Duration(s.latency * float64(time.Millisecond)),
			Calls:       s.calls,
			FailedCalls: s.failedCalls,
			Attempt:     s.attempt,
			Probe:       s.probe && s.state == StateConnecting,
			Circuit:     s.circuit,
			Error:       s.err,
			Sessions:    s.sessions,
		}
		if s.state == StateConnecting {
			r.Waiting = s.waiting
		}
		if s.state == StateBackoff && !s.retryAt.IsZero() {
			r.RetryIn = max(s.retryAt.Sub(now), 0)
		}
		if s.state == StateOpen && !s.probeAt.IsZero() {
			r.ProbeIn = max(s.probeAt.Sub(now), 0)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), cmp.Compare(a.Name, b.Name))
	})
	return rows
}

// oneLine makes an error fit one line: whitespace runs (line breaks and
// tabs included) become one space, what a terminal would act on or hide is
// written out as escapes (textsafe.Line), and it is cut at maxErrorRunes
// with "…".
func oneLine(s string) string {
	s = textsafe.Line(strings.Join(strings.Fields(s), " "))
	if r := []rune(s); len(r) > maxErrorRunes {
		s = string(r[:maxErrorRunes-1]) + "…"
	}
	return s
}
