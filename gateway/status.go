package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/textsafe"
	"github.com/mcpvisor/mcpvisor/manager"
)

// StatusURI is the resource on /mcp that says, in plain words, what each
// server is doing: a model that misses a tool can read why and tell its
// user instead of guessing. StatusTool is the same as a tool, for clients
// that do not read resources (Options.StatusTool).
const (
	StatusURI  = "mcpvisor://status"
	StatusTool = "mcpvisor_status"
)

const statusDescription = "What each MCP server behind mcpvisor is doing: connected (and what it offers), starting, " +
	"down and why, and when it will be tried again. Read it when a tool you expected is missing or fails."

// addStatus offers the status on ep (/mcp only): the resource, and the
// tool unless Options.StatusTool is off.
func (ep *endpoint) addStatus() {
	ep.srv.AddResource(&mcp.Resource{URI: StatusURI, Name: "mcpvisor-status", Title: "Servers behind mcpvisor",
		Description: statusDescription, MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: StatusURI, MIMEType: "text/plain", Text: ep.g.statusText(time.Now())}}}, nil
		})
	if !ep.g.opts.StatusTool {
		return
	}
	ep.srv.AddTool(statusToolDef(),
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ep.g.statusText(time.Now())}}}, nil
		})
}

// statusToolDef is the definition of StatusTool.
func statusToolDef() *mcp.Tool {
	return &mcp.Tool{Name: StatusTool, Title: "Servers behind mcpvisor", Description: statusDescription,
		InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(bool)}}
}

// isStatus reports whether a request on ep is for the status itself,
// which is answered at once, never waiting for the servers.
func (ep *endpoint) isStatus(req mcp.Request) bool {
	if ep.sel != everything {
		return false
	}
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		return r.Params != nil && r.Params.Name == StatusTool && ep.g.opts.StatusTool
	case *mcp.ReadResourceRequest:
		return r.Params != nil && r.Params.URI == StatusURI
	}
	return false
}

// statusText is one line per declared server, in name order.
func (g *Gateway) statusText(now time.Time) string {
	names := g.src.Names()
	slices.Sort(names)
	if len(names) == 0 {
		return "No MCP servers are declared."
	}
	var b strings.Builder
	for _, name := range names {
		st, err := g.src.Status(name)
		if err != nil {
			continue // removed meanwhile
		}
		b.WriteString(describe(st, now))
		b.WriteByte('\n')
	}
	return b.String()
}

// describe says what one server is doing, why it is down and when it is
// tried again, in words a model can pass on.
func describe(st manager.Status, now time.Time) string {
	name := textsafe.Line(st.Name)
	why := ""
	if st.LastError != "" {
		why = " The last error: " + textsafe.Line(st.LastError) + "."
	}
	next := ""
	if !st.NextAttempt.IsZero() {
		next = fmt.Sprintf(" It is tried again in %s.", roundUp(st.NextAttempt.Sub(now)))
	}
	switch st.State {
	case manager.StateConnected:
		return fmt.Sprintf("%s: connected, offering %s, %s and %s.", name,
			count(st.Tools, "tool"), count(st.Resources, "resource"), count(st.Prompts, "prompt"))
	case manager.StateConnecting:
		switch {
		case st.Waiting != "":
			return fmt.Sprintf("%s: waiting for its turn to connect (%s).%s", name, textsafe.Line(st.Waiting), why)
		case st.Attempts > 0:
			return fmt.Sprintf("%s: down, connecting again after %s.%s", name, count(st.Attempts, "failed attempt"), why)
		}
		return fmt.Sprintf("%s: starting.", name)
	case manager.StateBackoff:
		return fmt.Sprintf("%s: down after %s.%s%s Its tools answer with an error until then.", name,
			count(st.Attempts, "failed attempt"), why, next)
	case manager.StateOpen:
		return fmt.Sprintf("%s: down after %s in a row, so it is not tried for a while.%s%s", name,
			count(st.Attempts, "failed attempt"), why, next)
	case manager.StateFailed:
		return fmt.Sprintf("%s: down for good after %s.%s It is not tried again until the user reconnects it.", name,
			count(st.Attempts, "failed attempt"), why)
	case manager.StateUnauthorized:
		return fmt.Sprintf("%s: the server asks for a login.%s It is not tried again until the user logs in.", name, why)
	case manager.StateIdle:
		return fmt.Sprintf("%s: idle, closed after a while unused; calling one of its tools starts it again.", name)
	case manager.StateDisabled:
		return fmt.Sprintf("%s: turned off by the user; it offers nothing until they turn it on.", name)
	case manager.StateClosing, manager.StateRemoved:
		return fmt.Sprintf("%s: being removed.", name)
	}
	return fmt.Sprintf("%s: %s.", name, st.State)
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// roundUp is d to the tenth of a second above (never "0s" for a retry
// still to come).
func roundUp(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + 99*time.Millisecond).Truncate(100 * time.Millisecond)
}
