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
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// rawHTTPServer is a go-sdk server over streamable HTTP on loopback that
// counts the calls that came on the raw path (by their id).
type rawHTTPServer struct {
	url       string
	raw       atomic.Int32  // tools/call POSTs whose id is the raw path's
	started   chan struct{} // block's calls, as they start
	cancelled chan struct{} // block's calls, as their context ends
}

func newRawHTTPServer(t *testing.T, jsonResponse bool) *rawHTTPServer {
	t.Helper()
	s := &rawHTTPServer{started: make(chan struct{}, 4), cancelled: make(chan struct{}, 4)}
	stop := make(chan struct{}) // ends the calls of block still running when the test ends
	srv := mcp.NewServer(&mcp.Implementation{Name: "rawhttp", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	reply := func(text string, isError bool) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Text string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		return reply(args.Text, false), nil
	})
	srv.AddTool(&mcp.Tool{Name: "fail", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return reply("no luck", true), nil
	})
	srv.AddTool(&mcp.Tool{Name: "boom", InputSchema: obj}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32001, Message: "boom: the tool broke"}
	})
	srv.AddTool(&mcp.Tool{Name: "chatty", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "said"})
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: "t", Progress: 1, Total: 2})
		return reply("done", false), nil
	})
	srv.AddTool(&mcp.Tool{Name: "block", InputSchema: obj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.started <- struct{}{}
		select {
		case <-ctx.Done():
			s.cancelled <- struct{}{}
		case <-stop:
		}
		return nil, ctx.Err()
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"method":"tools/call"`)) && bytes.Contains(body, []byte(`"id":"`+rawrpc.IDPrefix)) {
				s.raw.Add(1)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close) // after the manager's close, which ends its streams
	t.Cleanup(func() { close(stop) })
	s.url = hs.URL
	return s
}

// rawHTTPManager is a manager with srv's server as "web".
func rawHTTPManager(t *testing.T, srv *rawHTTPServer) *manager.Manager {
	t.Helper()
	m := newManager(t, manager.Options{})
	require.NoError(t, m.Add("web", decode(t, map[string]any{"url": srv.url,
		"timeouts": map[string]any{"idle": 0, "health_interval": "1h", "health_timeout": "1s"}})))
	waitState(t, m, "web", manager.StateConnected)
	return m
}

// A raw call of a streamable HTTP server goes on the raw path and comes
// back as Call's does, whether the server answers in JSON or on an event
// stream: the result, a tool's isError, a JSON-RPC error.
func TestCallRawOverHTTPAnswersAsCallDoes(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("json response %v", jsonResponse), func(t *testing.T) {
			srv := newRawHTTPServer(t, jsonResponse)
			m := rawHTTPManager(t, srv)
			require.True(t, m.RawCalls("web"))
			ctx := context.Background()
			opts := manager.CallOptions{Timeout: patience}
			for _, tool := range []string{"echo", "fail", "boom"} {
				args := map[string]any{"text": "héllo"}
				want, wantErr := m.Call(ctx, "web."+tool, args, opts)
				raw, err := m.CallRaw(ctx, "web", tool, json.RawMessage(`{"text":"héllo"}`), nil, opts)
				if wantErr != nil {
					require.Error(t, err, tool)
					var we, ge *manager.Error
					require.True(t, errors.As(wantErr, &we))
					require.True(t, errors.As(err, &ge), "%T", err)
					require.Equal(t, we.Code, ge.Code, tool)
					var wr, gr *jsonrpc.Error
					require.True(t, errors.As(wantErr, &wr))
					require.True(t, errors.As(err, &gr), "the server's error answer: %v", err)
					require.Equal(t, wr.Code, gr.Code)
					require.Equal(t, wr.Message, gr.Message)
					continue
				}
				require.NoError(t, err, tool)
				var got mcp.CallToolResult
				require.NoError(t, json.Unmarshal(raw, &got), string(raw))
				require.Equal(t, want.IsError, got.IsError, tool)
				require.Equal(t, text(t, want), text(t, &got), tool)
			}
			require.EqualValues(t, 3, srv.raw.Load(), "each raw call went on the raw path")
		})
	}
}

// What a server logs and reports during a raw call on its response stream
// is published before the call returns, as it is for a stdio server.
func TestCallRawOverHTTPPublishesWhatTheServerSaidFirst(t *testing.T) {
	srv := newRawHTTPServer(t, false)
	m := rawHTTPManager(t, srv)
	l := m.Notices().Listen(notify.ListenOptions{})
	defer l.Close()
	for i := range 5 {
		raw, err := m.CallRaw(context.Background(), "web", "chatty", nil, nil, manager.CallOptions{Timeout: patience})
		require.NoError(t, err)
		require.Contains(t, string(raw), "done")
		var got []string
		for {
			n, ok, err := l.TryNext()
			require.NoError(t, err)
			if !ok {
				break
			}
			switch n := n.(type) {
			case notify.LogMessage:
				got = append(got, fmt.Sprint("log ", n.Data))
			case notify.Progress:
				got = append(got, fmt.Sprint("progress ", n.Progress))
			}
		}
		require.Equal(t, []string{"log said", "progress 1"}, got, "call %d", i)
	}
	require.EqualValues(t, 5, srv.raw.Load())
}

// A raw call over HTTP that times out or that its caller cancels ends on
// the server too (it is sent notifications/cancelled), and fails as
// Call's does.
func TestCallRawOverHTTPEndsUpstream(t *testing.T) {
	srv := newRawHTTPServer(t, false)
	m := rawHTTPManager(t, srv)
	awaitSignal := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(patience):
			t.Fatal(what)
		}
	}

	_, err := m.CallRaw(context.Background(), "web", "block", nil, nil, manager.CallOptions{Timeout: 200 * time.Millisecond})
	require.ErrorIs(t, err, manager.ErrTimeout)
	awaitSignal(srv.started, "the call never started")
	awaitSignal(srv.cancelled, "the timed-out call was not cancelled on the server")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.CallRaw(ctx, "web", "block", nil, nil, manager.CallOptions{Timeout: patience})
		done <- err
	}()
	awaitSignal(srv.started, "the call never started")
	cancel()
	require.ErrorIs(t, <-done, manager.ErrCancelled)
	awaitSignal(srv.cancelled, "the cancelled call was not cancelled on the server")
	require.EqualValues(t, 2, srv.raw.Load())

	raw, err := m.CallRaw(context.Background(), "web", "echo", json.RawMessage(`{"text":"still here"}`), nil, manager.CallOptions{Timeout: patience})
	require.NoError(t, err)
	require.Contains(t, string(raw), "still here")
}
