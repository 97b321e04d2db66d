package hud_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/events/hud"
	"github.com/mcpvisor/mcpvisor/manager"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fleet is a model with a server in every state, some with long errors,
// wide-rune names and tool calls: what the golden files show.
func fleet() *hud.Model {
	var s script
	s.at(0, "demo", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "demo", manager.Connected{Attempt: 1, Tools: 4})
	for _, k := range []events.Kind{events.KindClientConnected, events.KindClientConnected, events.KindClientDisconnected, events.KindClientConnected} {
		s.plain(0, k, "", events.Fields{"client": "claude-ai/0.1"})
	}
	s.at(0, "broken", manager.Added{Transport: manager.TransportStdio})
	s.at(time.Second, "broken", manager.BackingOff{Attempt: 2, Delay: 2400 * time.Millisecond, Error: `server "broken": spawn: fork/exec /nonexistent/prog: no such file or directory`})
	s.at(0, "remote", manager.Added{Transport: manager.TransportHTTP})
	s.at(time.Second, "remote", manager.CircuitChanged{From: manager.CircuitClosed, To: manager.CircuitOpen, Failures: 5, ProbeIn: 12000 * time.Millisecond, Error: `server "remote": connect: dial tcp 127.0.0.1:9: connect: connection refused`})
	s.at(0, "gone", manager.Added{Transport: manager.TransportSSE})
	s.at(0, "gone", manager.Failed{Attempts: 6, Error: "gave up after 6 attempts: 401 Unauthorized"})
	s.at(0, "off", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "off", manager.Disabled{})
	s.at(0, "東京-files", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "東京-files", manager.Connected{Attempt: 1, Tools: 12})
	s.at(0, "a-server-with-a-very-long-name", manager.Added{Transport: manager.TransportHTTP})
	s.at(0, "a-server-with-a-very-long-name", manager.Connecting{Attempt: 2})
	m := s.model()
	// Calls of 2, 3, 2 and 4 ms; one of 1.25s that failed.
	calls := map[string]manager.Metrics{
		"demo":     {Requests: 4, Latency: 2528 * time.Microsecond},
		"東京-files": {Requests: 1, Latency: 1250 * time.Millisecond, Errors: manager.ErrorCounts{Tool: 1}},
	}
	m.UpdateMetrics(func(server string) (manager.Metrics, error) { return calls[server], nil })
	m.SetTokens("demo", 842)
	m.SetTokens("東京-files", 12345)
	m.SetTokens("never-declared", 99) // ignored: no row
	m.SetEndpoints([]hud.Endpoint{{Path: "/mcp", Mode: "direct", Tokens: 34473},
		{Path: "/toolsets/dev", Mode: "search", Tokens: 473}, {Path: "/toolsets/empty", Mode: "code"}})
	return m
}

// now is when the golden files are rendered: the backoff and the circuit
// opened one second after t0.
var now = t0.Add(1500 * time.Millisecond)

func TestHUDRenderGolden(t *testing.T) {
	m := fleet()
	var empty hud.Model
	tests := []struct {
		name   string
		rows   []hud.Row
		layout hud.Layout
	}{
		{"fleet_100", m.View(now), hud.Layout{Width: 100}},
		{"fleet_60", m.View(now), hud.Layout{Width: 60}},
		{"fleet_24", m.View(now), hud.Layout{Width: 24}},
		{"fleet_max5_missed", m.View(now), hud.Layout{Width: 80, MaxLines: 5, Missed: 3}},
		{"empty", empty.View(now), hud.Layout{Width: 80}},
		{"fleet_clients", m.View(now), hud.Layout{Width: 100, Clients: m.Clients()}},
		{"fleet_endpoints", m.View(now), hud.Layout{Width: 100, Endpoints: m.Endpoints()}},
		{"fleet_max5_endpoints", m.View(now), hud.Layout{Width: 60, MaxLines: 5, Endpoints: m.Endpoints()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := strings.Join(hud.Lines(tt.rows, tt.layout), "\n") + "\n"
			golden := filepath.Join("testdata", tt.name+".golden")
			if *update {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./events/hud -run HUDRenderGolden -update to create it")
			assert.Equal(t, string(want), got, "%s differs; if the change is intended, rerun with -update", golden)
			for _, l := range hud.Lines(tt.rows, tt.layout) {
				assert.LessOrEqual(t, hud.Width(l), tt.layout.Width, "line %q", l)
			}
		})
	}
	assert.Equal(t, strings.Join(hud.Lines(m.View(now), hud.Layout{Width: 100}), "\n"), hud.Render(m.View(now), 100))
}

// At every width, every line fits, holds no control character, and is cut
// with "…" rather than wrapped; the block is a summary plus a line a server.
func TestHUDRenderFitsEveryWidth(t *testing.T) {
	var s script
	s.at(0, "evil", manager.Added{Transport: manager.TransportStdio})
	s.at(0, "evil", manager.BackingOff{Attempt: 1, Delay: 100 * time.Millisecond, Error: "line one\nline two \x1b[31mred\x1b[0m 🔥🔥 全角文字"})
	m := fleet()
	m.ApplyAll(s.evs)
	rows := m.View(now)
	for width := 1; width <= 160; width++ {
		lines := hud.Lines(rows, hud.Layout{Width: width})
		require.Len(t, lines, len(rows)+1, "width %d", width)
		for _, l := range lines {
			require.LessOrEqual(t, hud.Width(l), width, "width %d: %q", width, l)
			require.False(t, strings.ContainsFunc(l, unicode.IsControl), "width %d: control character in %q", width, l)
		}
	}
	assert.Nil(t, hud.Lines(rows, hud.Layout{Width: 0}))
}

// A name, transport or error a row carries as it is (rows need not come
// from the model) is drawn with its bidi overrides, isolates, zero-width
// characters and escape sequences written out: it can neither reorder the
// line nor hide characters nor act on the terminal.
func TestHUDRenderEscapesInvisibleCharacters(t *testing.T) {
	rows := []hud.Row{{
		Name: "admin\u202egnp", State: hud.StateFailed, Glyph: hud.StateFailed.Glyph(), Transport: "std\u200bio",
		Error: "denied by \u2066evil\u2069\ufeff \x1b]0;PWNED\x07\u0085",
	}}
	lines := hud.Lines(rows, hud.Layout{Width: 160})
	require.Len(t, lines, 2)
	assert.Contains(t, lines[1], `admin\u202egnp`)
	assert.Contains(t, lines[1], `std\u200bio`)
	assert.Contains(t, lines[1], `denied by \u2066evil\u2069\ufeff \x1b]0;PWNED\x07\u0085`)
	for _, l := range lines {
		assert.False(t, strings.ContainsFunc(l, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }), "%q", l)
	}
}

func TestHUDTruncateAndWidth(t *testing.T) {
	tests := []struct {
		s     string
		w     int
		want  string
		width int
	}{
		{"hello", 10, "hello", 5},
		{"hello", 5, "hello", 5},
		{"hello", 4, "hel…", 4},
		{"hello", 1, "…", 1},
		{"東京都", 6, "東京都", 6},
		{"東京都", 5, "東京…", 5},
		{"東京都", 4, "東…", 3},
		{"e\u0301te\u0301", 3, "e\u0301te\u0301", 3},
	}
	for _, tt := range tests {
		got := hud.Truncate(tt.s, tt.w)
		assert.Equal(t, tt.want, got, "Truncate(%q, %d)", tt.s, tt.w)
		assert.Equal(t, tt.width, hud.Width(got), "Width(%q)", got)
	}
}

func TestHUDCountdown(t *testing.T) {
	for d, want := range map[time.Duration]string{
		2400 * time.Millisecond:             "2.4s",
		9960 * time.Millisecond:             "10s",
		12 * time.Second:                    "12s",
		3*time.Minute + 5*time.Second:       "3m05s",
		2*time.Hour + 10*time.Minute + 20e9: "2h10m",
	} {
		assert.Equal(t, want, hud.Countdown(d), "%v", d)
	}
}
