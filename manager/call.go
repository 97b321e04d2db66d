package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools lists the tools of one server, or of every server when server is
// "", sorted by full name. Tools of servers that are not connected are
// listed with Available false (R-NS-2).
func (m *Manager) Tools(server string) ([]ToolInfo, error) {
	sups := m.supervisors()
	if server != "" {
		s, err := m.lookup(server, "tools")
		if err != nil {
			return nil, err
		}
		sups = []*supervisor{s}
	}
	var out []ToolInfo
	for _, s := range sups {
		snap := s.snap.Load()
		avail := snap.status.State == StateConnected
		for _, t := range snap.cat.toolList() {
			out = append(out, ToolInfo{
				FullName:    s.name + "." + t.Name,
				Server:      s.name,
				Name:        t.Name,
				Title:       t.Title,
				Description: t.Description,
				InputSchema: t.InputSchema,
				Available:   avail,
			})
		}
	}
	return out, nil
}

// CallOptions adjusts one call.
type CallOptions struct {
	// Timeout bounds the call, including waiting for the server to
	// connect. If zero, the server's request timeout.
	Timeout time.Duration
	// Progress, if set, receives the server's progress notifications for
	// this call, in order. It runs on the connection's goroutine: it must
	// not block. Notifications the server sent just before its answer may
	// arrive just after Call returns (up to a second after).
	Progress func(Progress)
}

// Progress is one progress notification of a call.
type Progress struct {
	Progress float64
	Total    float64 // zero if unknown
	Message  string
}

// Call invokes a tool by its full name ("server.tool") or by a bare tool
// name that exactly one server offers (R-NS-1). If the server is connecting
// or backing off, Call waits for that attempt, up to the timeout; it never
// starts another. A result with IsError set is a result, not an error
// (R-INV-2).
func (m *Manager) Call(ctx context.Context, name string, args any, opts CallOptions) (*mcp.CallToolResult, error) {
	s, tool, err := m.resolve(name)
	if err != nil {
		return nil, err
	}
	op := fmt.Sprintf("tools/call %q", tool)
	ctx, cancel := s.requestContext(ctx, opts.Timeout)
	defer cancel()

	snap, err := s.session(ctx, op)
	if err != nil {
		return nil, err
	}
	if snap.cat.tool(tool) == nil {
		return nil, toolNotFound(s.name, tool, snap.cat.toolNames())
	}
	args, err = checkArgs(snap.cat.schemas[tool], args)
	if err != nil {
		return nil, newError(CodeInvalidArguments, s.name, op, err)
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if opts.Progress != nil {
		token, done := s.progress.add(opts.Progress)
		defer done()
		params.SetProgressToken(token)
	}
	res, err := snap.session.CallTool(ctx, params)
	if err != nil {
		return nil, newError(CodeInvocationFailed, s.name, op, callFailure(ctx, err, snap.conn))
	}
	return res, nil
}

// callFailure turns what CallTool returned into the cause users see. When
// the session died under the call, it says so, with the process's exit
// status if that is why.
func callFailure(ctx context.Context, err error, c *conn) error {
	if cause := context.Cause(ctx); cause != nil {
		var te timeoutError
		if errors.As(cause, &te) {
			return te
		}
		return fmt.Errorf("cancelled: %w", cause)
	}
	// A session that ends under a call fails it with ErrConnectionClosed or,
	// when the peer hung up mid-read, a wrapped EOF (NOTES.md).
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if exit := c.awaitExit(); exit != nil {
			return fmt.Errorf("the call was cut off: server %w; it may or may not have run", exit)
		}
		return fmt.Errorf("connection lost during the call; it may or may not have run: %w", err)
	}
	return err
}

// session waits until the server is connected, then returns the snapshot
// holding its session. It never starts a connection itself: the supervisor
// is already trying (single-flight by construction, R-LIFE-1).
func (s *supervisor) session(ctx context.Context, op string) (*snapshot, error) {
	for {
		snap, changed := s.watch()
		st := snap.status
		switch st.State {
		case StateConnected:
			return snap, nil
		case StateRemoved, StateClosing:
			return nil, errorf(CodeClosed, s.name, op, "server is being removed")
		case StateFailed:
			return nil, errorf(CodeConnectionFailed, s.name, op, "server is failed: %s; mcp_reconnect(%q) to try again", st.LastError, s.name)
		case StateDisabled:
			return nil, errorf(CodeServerDisabled, s.name, op, "server is disabled; enable it to connect")
		}
		select {
		case <-changed:
		case <-ctx.Done():
			var te timeoutError
			if !errors.As(context.Cause(ctx), &te) {
				return nil, errorf(CodeConnectionFailed, s.name, op, "cancelled while %s%s", st.State, lastErrorSuffix(st))
			}
			if st.State == StateConnecting && st.LastError == "" {
				return nil, newError(CodeConnectionTimeout, s.name, op, fmt.Errorf("still connecting: %w", te))
			}
			return nil, errorf(CodeConnectionFailed, s.name, op, "not connected (%s)%s: %w", st.State, lastErrorSuffix(st), te)
		}
	}
}

// resolve maps a full or bare tool name to its server and tool (R-NS-1).
func (m *Manager) resolve(name string) (*supervisor, string, error) {
	name = strings.TrimSpace(name)
	if server, tool, ok := strings.Cut(name, "."); ok {
		if s, err := m.lookup(server, "call"); err == nil {
			return s, tool, nil
		}
	}
	var matches []*supervisor
	var all, close []string
	qualified := strings.Contains(name, ".")
	for _, s := range m.supervisors() {
		for _, t := range s.snap.Load().cat.toolList() {
			full := s.name + "." + t.Name
			all = append(all, full)
			if t.Name == name {
				matches = append(matches, s)
			}
			// A typo of the full name, or of the tool's own name for a bare name.
			candidates := []string{full}
			if !qualified {
				candidates = append(candidates, t.Name)
			}
			if len(closeMatches(name, candidates)) > 0 {
				close = append(close, full)
			}
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], name, nil
	case 0:
		msg := fmt.Sprintf("no tool %q", name)
		if server, _, ok := strings.Cut(name, "."); ok {
			msg = fmt.Sprintf("no server %q and no tool %q", server, name)
		}
		if len(close) > 0 {
			msg += "; did you mean " + quoteList(close) + "?"
		} else if len(all) == 0 {
			msg += "; no tools are known yet (are the servers connected? see mcp_status())"
		}
		return nil, "", errorf(CodeToolNotFound, "", "call", "%s", msg)
	}
	var full []string
	for _, s := range matches {
		full = append(full, s.name+"."+name)
	}
	return nil, "", errorf(CodeAmbiguousTool, "", "call", "tool %q is offered by %d servers; call one of: %s", name, len(full), strings.Join(full, ", "))
}

func toolNotFound(server, tool string, names []string) error {
	msg := fmt.Sprintf("server has no tool %q", tool)
	if close := closeMatches(tool, names); len(close) > 0 {
		msg += "; did you mean " + quoteList(close) + "?"
	} else if len(names) > 0 {
		msg += "; its tools: " + strings.Join(names, ", ")
	}
	return errorf(CodeToolNotFound, server, fmt.Sprintf("tools/call %q", tool), "%s", msg)
}

// quoteList renders names as "a", "b" or "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
