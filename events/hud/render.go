package hud

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/textsafe"
)

// maxNameWidth caps the name column; longer names are cut with "…".
const maxNameWidth = 20

// Layout says how to lay rows out as text.
type Layout struct {
	// Width is the number of columns every line fits in. If zero or less,
	// nothing is rendered.
	Width int
	// MaxLines bounds the lines, summary included; when the servers do not
	// fit, the last line says how many more there are. If zero, no bound;
	// otherwise at least 2.
	MaxLines int
	// Missed is shown in the summary when not zero ([Model.Missed]).
	Missed uint64
	// Clients, when not zero, is shown in the summary: the MCP clients
	// the gateway serves ([Model.Clients]).
	Clients int
	// Endpoints, when not empty, are shown on the line under the summary:
	// each gateway endpoint, its mode and what its tools/list costs
	// ([Model.Endpoints]).
	Endpoints []Endpoint
}

// Render lays rows out in width columns: the summary line, then one line
// per server. Lines are joined with "\n", without a trailing newline.
func Render(rows []Row, width int) string {
	return strings.Join(Lines(rows, Layout{Width: width}), "\n")
}

// Lines lays rows out as lines of at most l.Width columns each: the summary
// (`mcpvisor: 3 servers · 2 connected · 1 retrying`), the endpoints when
// there are any (`/mcp direct 34.5k tok · /toolsets/dev search 473 tok`;
// left out when MaxLines leaves room for one line only), then one line per
// server with aligned columns (glyph, name, transport, tools, the tokens
// their definitions cost, latency)
// followed by its status and last error, cut with "…" where the width ends.
// Lines never hold control or invisible format characters.
func Lines(rows []Row, l Layout) []string {
	if l.Width <= 0 {
		return nil
	}
	shown := rows
	more := 0
	eps := ""
	if len(l.Endpoints) > 0 && (l.MaxLines <= 0 || l.MaxLines > 2) {
		eps = endpointLine(l.Endpoints)
	}
	if l.MaxLines > 0 {
		limit := max(l.MaxLines, 2) - 1 // the summary takes one line
		if eps != "" {
			limit--
		}
		if len(rows) > limit {
			shown, more = rows[:limit-1], len(rows)-(limit-1)
		}
	}
	out := make([]string, 0, len(shown)+2)
	head := summary(rows, l, false)
	if Width(head) > l.Width {
		head = summary(rows, l, true)
	}
	out = append(out, Truncate(head, l.Width))
	if eps != "" {
		out = append(out, Truncate(eps, l.Width))
	}
	cols := measure(shown, l.Width)
	for _, r := range shown {
		out = append(out, Truncate(cols.line(r), l.Width))
	}
	if more > 0 {
		out = append(out, Truncate(fmt.Sprintf("  … and %d more (mcp_hud_model() lists them all)", more), l.Width))
	}
	return out
}

// summary is the first line: the server count and how many are in each
// state that has any, in words ("2 connected") or, compact, by glyph ("2●").
func summary(rows []Row, l Layout, compact bool) string {
	missed := l.Missed
	if len(rows) == 0 {
		s := "mcpvisor: no servers"
		if l.Clients > 0 {
			s += fmt.Sprintf(" · %d %s", l.Clients, plural(l.Clients, "client", "clients"))
		}
		if missed > 0 {
			s += fmt.Sprintf(" · missed %d %s", missed, plural(int(missed), "event", "events"))
		}
		return s
	}
	n := map[State]int{}
	for _, r := range rows {
		n[r.State]++
	}
	parts := []string{fmt.Sprintf("mcpvisor: %d %s", len(rows), plural(len(rows), "server", "servers"))}
	var counts []string
	for _, st := range []struct {
		state State
		label string
	}{
		{StateConnected, "connected"},
		{StateConnecting, "connecting"},
		{StateBackoff, "retrying"},
		{StateOpen, "circuit open"},
		{StateFailed, "failed"},
		{StateUnauthorized, "unauthorized"},
		{StateIdle, "idle"},
		{StateDisabled, "disabled"},
		{StateClosing, "closing"},
	} {
		switch c := n[st.state]; {
		case c == 0:
		case compact:
			counts = append(counts, fmt.Sprintf("%d%s", c, st.state.Glyph()))
		default:
			parts = append(parts, fmt.Sprintf("%d %s", c, st.label))
		}
	}
	if compact {
		parts = append(parts, strings.Join(counts, " "))
	}
	if l.Clients > 0 {
		parts = append(parts, fmt.Sprintf("%d %s", l.Clients, plural(l.Clients, "client", "clients")))
	}
	if missed > 0 {
		parts = append(parts, fmt.Sprintf("missed %d %s", missed, plural(int(missed), "event", "events")))
	}
	return strings.Join(parts, " · ")
}

// columns are the widths of the aligned columns of one block; a zero
// width leaves that column out.
type columns struct {
	name, transport, tools, tokens, latency int
}

// tokens is the row's token estimate as shown, "" when not counted.
func tokens(r Row) string { return tokenText(r.Tokens) }

// tokenText is a token estimate as shown ("840 tok", "12.3k tok"), ""
// for none.
func tokenText(n int) string {
	switch {
	case n <= 0:
		return ""
	case n < 1000:
		return fmt.Sprintf("%d tok", n)
	}
	return fmt.Sprintf("%.1fk tok", float64(n)/1000)
}

// minStatus is the room measure tries to leave for the status and error.
const minStatus = 28

// measure sizes the columns for rows. When width leaves the status less than
// minStatus columns, it gives up, in turn, the tokens, the transport, name
// columns over 12, the latency, the tool count and name columns over 8.
func measure(rows []Row, width int) columns {
	var c columns
	for _, r := range rows {
		c.name = max(c.name, min(Width(textsafe.Line(r.Name)), maxNameWidth))
		c.transport = max(c.transport, Width(textsafe.Line(r.Transport)))
		c.tools = max(c.tools, len(fmt.Sprint(r.Tools)))
		c.tokens = max(c.tokens, len(tokens(r)))
		c.latency = max(c.latency, len(latency(r)))
	}
	narrow := func(floor int) {
		if over := c.fixed() + minStatus - width; over > 0 {
			c.name = max(c.name-over, min(c.name, floor))
		}
	}
	for _, step := range []func(){
		func() { c.tokens = 0 },
		func() { c.transport = 0 },
		func() { narrow(12) },
		func() { c.latency = 0 },
		func() { c.tools = 0 },
		func() { narrow(8) },
	} {
		if width-c.fixed() >= minStatus {
			break
		}
		step()
	}
	return c
}

// fixed is the width of everything before the status.
func (c columns) fixed() int {
	n := 2 + c.name // glyph, space, name
	if c.transport > 0 {
		n += 2 + c.transport
	}
	if c.tools > 0 {
		n += 2 + c.tools + 6 // " tools"
	}
	if c.tokens > 0 {
		n += 2 + c.tokens
	}
	if c.latency > 0 {
		n += 2 + c.latency
	}
	return n
}

// line is one server's line, before it is cut to the width.
func (c columns) line(r Row) string {
	var b strings.Builder
	b.WriteString(r.Glyph)
	b.WriteString(" ")
	b.WriteString(padRight(textsafe.Line(r.Name), c.name))
	if c.transport > 0 {
		b.WriteString("  ")
		b.WriteString(padRight(textsafe.Line(r.Transport), c.transport))
	}
	if c.tools > 0 {
		b.WriteString("  ")
		b.WriteString(padLeft(fmt.Sprint(r.Tools), c.tools))
		b.WriteString(" ")
		b.WriteString(padRight(plural(r.Tools, "tool", "tools"), 5))
	}
	if c.tokens > 0 {
		b.WriteString("  ")
		b.WriteString(padLeft(tokens(r), c.tokens))
	}
	if c.latency > 0 {
		b.WriteString("  ")
		b.WriteString(padLeft(latency(r), c.latency))
	}
	if s := status(r); s != "" {
		b.WriteString("  ")
		b.WriteString(s)
	}
	return strings.TrimRight(b.String(), " ")
}

// status says what the server is doing and what went wrong last.
func status(r Row) string {
	var parts []string
	switch r.State {
	case StateConnecting:
		switch {
		case r.Waiting != "":
			parts = append(parts, "waiting: "+textsafe.Line(r.Waiting))
		case r.Probe:
			parts = append(parts, fmt.Sprintf("probing (attempt %d)", r.Attempt))
		case r.Attempt > 1:
			parts = append(parts, fmt.Sprintf("connecting (attempt %d)", r.Attempt))
		default:
			parts = append(parts, "connecting")
		}
	case StateBackoff:
		if r.RetryIn > 0 {
			parts = append(parts, fmt.Sprintf("retry in %s (attempt %d)", Countdown(r.RetryIn), r.Attempt))
		} else {
			parts = append(parts, fmt.Sprintf("retrying (attempt %d)", r.Attempt))
		}
	case StateOpen:
		if r.ProbeIn > 0 {
			parts = append(parts, "circuit open", "probe in "+Countdown(r.ProbeIn))
		} else {
			parts = append(parts, "circuit open", "probe due")
		}
	case StateFailed:
		if r.Error == "" {
			parts = append(parts, "failed")
		} // else the error says it: "gave up after 5 attempts: …"
	case StateIdle, StateDisabled, StateClosing, StateUnauthorized:
		parts = append(parts, string(r.State))
	}
	if r.Sessions > 0 {
		parts = append(parts, fmt.Sprintf("%d client %s", r.Sessions, plural(r.Sessions, "session", "sessions")))
	}
	if r.Circuit == CircuitHalfOpen && !r.Probe {
		parts = append(parts, "circuit half-open")
	}
	if r.FailedCalls > 0 {
		parts = append(parts, fmt.Sprintf("%d failed %s", r.FailedCalls, plural(r.FailedCalls, "call", "calls")))
	}
	if r.Error != "" {
		parts = append(parts, textsafe.Line(r.Error))
	}
	return strings.Join(parts, " · ")
}

// latency is the average call duration ("<1ms", "2.5ms", "12ms", "1.2s"), or
// "" before the first call.
func latency(r Row) string {
	d := r.Latency
	switch {
	case r.Calls == 0:
		return ""
	case d < time.Millisecond: // durations come in whole milliseconds
		return "<1ms"
	case d.Round(100*time.Microsecond) < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d.Round(100*time.Millisecond) < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
}

// Countdown renders a time left: "2.4s" under ten seconds, then "12s",
// "3m05s", "2h10m".
func Countdown(d time.Duration) string {
	switch {
	case d.Round(100*time.Millisecond) < 10*time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
