package console

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager"
)

// row is one server as the servers table shows it.
type row struct {
	Name      string
	State     string // as manager.State spells it
	Label     string // in words: "backing off", "circuit open", …
	Tone      string // ok, wait, bad or off: the state's colour
	Next      time.Time
	NextIn    string // "in 4s", for the first paint; the script counts down
	Attempts  int
	Waiting   string
	Circuit   string
	Health    string
	Transport string
	Endpoint  string
	Tools     int
	Resources int
	Prompts   int
	ToolNames []string
	Tokens    int // what the tools' definitions cost a model when listed
	Sessions  int
	Requests  uint64
	Errors    uint64
	InFlight  int
	Latency   string
	LastError string
	Remedy    string
	Disabled  bool
}

// labels say each state in words.
var labels = map[manager.State]struct{ label, tone string }{
	manager.StateConnecting:   {"connecting", "wait"},
	manager.StateConnected:    {"connected", "ok"},
	manager.StateBackoff:      {"backing off", "wait"},
	manager.StateOpen:         {"circuit open", "bad"},
	manager.StateFailed:       {"failed", "bad"},
	manager.StateIdle:         {"idle", "off"},
	manager.StateDisabled:     {"disabled", "off"},
	manager.StateClosing:      {"closing", "off"},
	manager.StateRemoved:      {"removed", "off"},
	manager.StateUnauthorized: {"waiting for a login", "bad"},
}

// remedies say what brings a server back.
var remedies = map[manager.RemedyKind]string{
	manager.RemedyWait:           "tries again by itself",
	manager.RemedyReconnect:      "reconnect to try again",
	manager.RemedyEnable:         "enable to connect",
	manager.RemedyLogin:          "log in (mcpvisor login NAME)",
	manager.RemedyCredentials:    "declare the credentials it wants, then reconnect",
	manager.RemedyFixDeclaration: "fix its declaration",
}

// rowOf makes st's row, with the metrics and tools of its server.
func (c *Console) rowOf(st manager.Status) row {
	now := c.opts.Now()
	l, ok := labels[st.State]
	if !ok {
		l.label, l.tone = st.State.String(), "off"
	}
	r := row{Name: st.Name, State: st.State.String(), Label: l.label, Tone: l.tone, Attempts: st.Attempts,
		Waiting: st.Waiting, Circuit: st.Circuit.String(), Transport: string(st.Transport), Endpoint: st.Endpoint,
		Tools: st.Tools, Resources: st.Resources, Prompts: st.Prompts, Sessions: len(st.Sessions),
		LastError: st.LastError, Remedy: remedies[st.Remedy.Kind], Disabled: st.State == manager.StateDisabled}
	if (st.State == manager.StateBackoff || st.State == manager.StateOpen) && !st.NextAttempt.IsZero() {
		r.Next = st.NextAttempt
		r.NextIn = "next attempt " + until(st.NextAttempt, now)
	}
	switch {
	case st.State != manager.StateConnected:
		r.Health = "–"
	case st.PingUnsupported:
		r.Health = "no ping"
	case !st.Healthy:
		r.Health = "unhealthy"
	case st.LastPing > 0:
		r.Health = "ok " + roundDuration(st.LastPing)
	default:
		r.Health = "ok"
	}
	if m, err := c.opts.Backend.Metrics(st.Name); err == nil {
		r.Requests, r.Errors, r.InFlight = m.Requests, m.Errors.Total(), m.InFlight
		if m.Latency > 0 {
			r.Latency = roundDuration(m.Latency)
		}
	}
	if tools, err := c.opts.Backend.Tools(st.Name); err == nil {
		defs := make([]*mcp.Tool, 0, len(tools))
		for _, t := range tools {
			r.ToolNames = append(r.ToolNames, t.Name)
			if t.Tool != nil {
				defs = append(defs, t.Tool)
			}
		}
		r.Tokens = c.costs.Tools(defs)
		slices.Sort(r.ToolNames)
	}
	return r
}

// rows are every server's rows, in the order of their names.
func (c *Console) rows() []row {
	sts := c.opts.Backend.Statuses()
	slices.SortFunc(sts, func(a, b manager.Status) int { return strings.Compare(a.Name, b.Name) })
	rows := make([]row, 0, len(sts))
	for _, st := range sts {
		rows = append(rows, c.rowOf(st))
	}
	return rows
}

// until says how long from now to t: "in 4s", "now".
func until(t, now time.Time) string {
	d := t.Sub(now)
	if d < time.Second {
		return "now"
	}
	return "in " + (d + time.Second - 1).Truncate(time.Second).String()
}

// roundDuration says d to a sensible precision: 850µs, 12ms, 1.2s.
func roundDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

// rowID is the HTML id of a server's row.
func rowID(name string) string { return fmt.Sprintf("srv-%x", name) }
