package manager_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// faultyHTTPServer is a go-sdk server over streamable HTTP on loopback
// with one tool, echo, in front of which a middleware misbehaves for
// calls of tools it names itself (they are not the server's: the
// middleware answers them):
//
//   - status500, status502, status400: the POST is answered with that
//     status and a plain-text body;
//   - html: answered 200 with an HTML page;
//   - cut: answered on an event stream with a log message in an event
//     with an id (and a retry: field of 10ms), after which the stream
//     ends without the answer; a GET with that Last-Event-ID is answered
//     as the resume field says;
//   - cutnoid: the same without event ids.
type faultyHTTPServer struct {
	url string
	// resume is the status a resuming GET is answered with; 200 (or 0)
	// serves the answer, "resumed", on the resumed stream.
	resume int

	mu sync.Mutex
	// mu guards the following.
	resumes []string                   // the Last-Event-IDs of the resuming GETs, in order
	pending map[string]json.RawMessage // the ids of the calls cut, by their last event id
	calls   []toolPost                 // the tools/call POSTs, in order
}

// toolPost is a tools/call POST the server saw: its tool and session.
type toolPost struct{ tool, session string }

func newFaultyHTTPServer(t *testing.T, resume int) *faultyHTTPServer {
	t.Helper()
	s := &faultyHTTPServer{resume: resume, pending: map[string]json.RawMessage{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "faulty", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Text}}}, nil
	})
	for _, name := range []string{"status500", "status502", "status400", "html", "cut", "cutnoid"} {
		// Listed so that the manager calls them; the middleware answers.
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, errors.New("unreachable")
		})
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
			s.serveResume(w, r)
			return
		}
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "tools/call" {
			s.mu.Lock()
			s.calls = append(s.calls, toolPost{msg.Params.Name, r.Header.Get("Mcp-Session-Id")})
			s.mu.Unlock()
		}
		if msg.Method != "tools/call" || !s.misbehave(w, msg.ID, msg.Params.Name) {
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(hs.Close)
	s.url = hs.URL
	return s
}

// misbehave answers a call of one of the middleware's tools and reports
// whether it did.
func (s *faultyHTTPServer) misbehave(w http.ResponseWriter, id json.RawMessage, tool string) bool {
	switch tool {
	case "status500":
		http.Error(w, "the upstream fell over", http.StatusInternalServerError)
	case "status502":
		http.Error(w, "bad gateway", http.StatusBadGateway)
	case "status400":
		http.Error(w, "no", http.StatusBadRequest)
	case "html":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<html><body>Log in to continue</body></html>")
	case "cut", "cutnoid":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		idLine := ""
		if tool == "cut" {
			idLine = "id: ev-1\nretry: 10\n"
			s.mu.Lock()
			s.pending["ev-1"] = id
			s.mu.Unlock()
		}
		fmt.Fprintf(w, "%sdata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"half way\"}}\n\n", idLine)
		w.(http.Flusher).Flush()
		// The handler returns: the stream ends without the answer.
	default:
		return false
	}
	return true
}

// serveResume answers a GET resuming a cut stream.
func (s *faultyHTTPServer) serveResume(w http.ResponseWriter, r *http.Request) {
	last := r.Header.Get("Last-Event-ID")
	s.mu.Lock()
	s.resumes = append(s.resumes, last)
	id, ok := s.pending[last]
	s.mu.Unlock()
	if s.resume != 0 && s.resume != http.StatusOK {
		http.Error(w, "resumption refused", s.resume)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	if ok {
		fmt.Fprintf(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", id)
	}
}

func (s *faultyHTTPServer) resumed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.resumes...)
}

// sessionOfLast is the HTTP session of the last POST calling tool.
func (s *faultyHTTPServer) sessionOfLast(t *testing.T, tool string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.calls) - 1; i >= 0; i-- {
		if s.calls[i].tool == tool {
			return s.calls[i].session
		}
	}
	t.Fatalf("no call of %s reached the server", tool)
	return ""
}

// faultyManager is a manager with srv as "web", connected, and a
// timeline of its events from then on.
func faultyManager(t *testing.T, srv *faultyHTTPServer) (*manager.Manager, *timeline) {
	t.Helper()
	m := newManager(t, manager.Options{})
	require.NoError(t, m.Add("web", decode(t, map[string]any{"url": srv.url,
		"timeouts": map[string]any{"idle": 0, "health_interval": "1h", "health_timeout": "1s"}})))
	waitState(t, m, "web", manager.StateConnected)
	require.True(t, m.RawCalls("web"))
	return m, watch(t, m)
}

// callWay calls tool on the raw path (CallRaw) if raw, else on the go-sdk
// path (Call), and returns its text.
func callWay(t testing.TB, m *manager.Manager, raw bool, tool string) (string, error) {
	opts := manager.CallOptions{Timeout: patience}
	if raw {
		res, err := m.CallRaw(context.Background(), "web", tool, json.RawMessage(`{}`), nil, opts)
		if err != nil {
			return "", err
		}
		var r mcp.CallToolResult
		if err := json.Unmarshal(res, &r); err != nil {
			return "", err
		}
		return text(t, &r), nil
	}
	res, err := m.Call(context.Background(), "web."+tool, map[string]any{}, opts)
	if err != nil {
		return "", err
	}
	return text(t, res), nil
}

// afterwards is what became of the server's HTTP session after a call
// that failed.
type afterwards int

const (
	kept     afterwards = iota // the session carries on
	replaced                   // the session ends and the server reconnects
)

// A raw call over HTTP whose server misbehaves fails, or carries on, as
// the same call on the go-sdk path does: a transient status is a
// rejection (-32005) that keeps the session; any other error status, or
// an answer that is neither JSON nor an event stream, ends the session,
// the call failing as disconnected, and the server reconnects; a stream
// cut without event ids fails the call alone. The errors are worded
// alike.
func TestCallRawOverHTTPFailsAsCallDoes(t *testing.T) {
	tests := []struct {
		tool     string
		rejected bool // -32005 in the chain
		after    afterwards
	}{
		{"status500", true, kept},
		{"status502", true, kept},
		{"status400", false, replaced},
		{"html", false, replaced},
		{"cutnoid", false, kept},
	}
	for _, tt := range tests {
		said := map[bool]string{} // the error's text, by path
		for _, raw := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s raw %v", tt.tool, raw), func(t *testing.T) {
				srv := newFaultyHTTPServer(t, 0)
				m, tl := faultyManager(t, srv)
				_, err := callWay(t, m, raw, tt.tool)
				require.ErrorIs(t, err, manager.ErrInvocationFailed)
				said[raw] = err.Error()
				var me *manager.Error
				require.ErrorAs(t, err, &me)
				require.Equal(t, "web", me.Server)
				require.Contains(t, me.Op, "tools/call")
				var je *jsonrpc.Error
				if tt.rejected {
					require.ErrorAs(t, err, &je)
					require.EqualValues(t, -32005, je.Code, "a rejection by the transport, as the go-sdk's")
				} else {
					require.False(t, errors.As(err, &je), "not an error answer: %v", err)
				}
				first := srv.sessionOfLast(t, tt.tool)
				if tt.after == replaced {
					require.ErrorIs(t, err, manager.ErrDisconnected)
					evs := tl.until("web", events.KindConnected, patience)
					require.Contains(t, kinds(lifecycle(evs)), events.KindDisconnected)
				} else {
					require.NotErrorIs(t, err, manager.ErrDisconnected)
				}
				got, err := callWay(t, m, raw, "echo")
				require.NoError(t, err)
				require.Empty(t, got)
				if tt.after == replaced {
					require.NotEqual(t, first, srv.sessionOfLast(t, "echo"), "the session was replaced")
				} else {
					require.Equal(t, first, srv.sessionOfLast(t, "echo"), "the session carries on")
				}
			})
		}
		require.Equal(t, said[false], said[true], "%s: worded alike", tt.tool)
	}
}

// A raw call over HTTP whose event stream is cut before the answer, after
// an event with an id, is resumed as the go-sdk path resumes it: a GET
// with that Last-Event-ID, whose stream brings the answer; what came
// before the cut is published. When the server refuses the resumption,
// the session is given up, the call fails as disconnected and the server
// reconnects, as on the go-sdk path.
func TestCallRawOverHTTPResumesACutStream(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw %v", raw), func(t *testing.T) {
			srv := newFaultyHTTPServer(t, 0)
			m, tl := faultyManager(t, srv)
			got, err := callWay(t, m, raw, "cut")
			require.NoError(t, err)
			require.Equal(t, "resumed", got)
			require.Equal(t, []string{"ev-1"}, srv.resumed())
			var said []any
			for _, n := range tl.heard(time.Second) {
				said = append(said, n.Fields["params"])
			}
			require.Len(t, said, 1, "the log message before the cut")
			require.Contains(t, fmt.Sprint(said[0]), "half way")
		})
		t.Run(fmt.Sprintf("refused, raw %v", raw), func(t *testing.T) {
			srv := newFaultyHTTPServer(t, http.StatusInternalServerError)
			m, tl := faultyManager(t, srv)
			_, err := callWay(t, m, raw, "cut")
			require.ErrorIs(t, err, manager.ErrDisconnected)
			var me *manager.Error
			require.ErrorAs(t, err, &me)
			require.Equal(t, "web", me.Server)
			require.Equal(t, []string{"ev-1"}, srv.resumed())
			first := srv.sessionOfLast(t, "cut")
			evs := tl.until("web", events.KindConnected, patience)
			require.Contains(t, kinds(lifecycle(evs)), events.KindDisconnected)
			_, err = callWay(t, m, raw, "echo")
			require.NoError(t, err)
			require.NotEqual(t, first, srv.sessionOfLast(t, "echo"))
		})
	}
}
