package manager_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// The environment of the test binary as the server of these tests
// ("newgen", see serveDemoIfAsked): where it records what it reads, and
// the file it creates when a call of block is cancelled.
const (
	newgenRecordEnv    = "MCPVISOR_NEWGEN_RECORD"
	newgenCancelledEnv = "MCPVISOR_NEWGEN_CANCELLED"
)

// newgenServer is the go-sdk server these tests call on protocol
// 2026-07-28: echo answers with what it was sent (its arguments and
// _meta); ask asks its client for a name through input requests before
// it answers with the answer; steps reports three steps of progress;
// block calls started, then runs until it is cancelled, then calls
// cancelled, or until stop is closed.
func newgenServer(started, cancelled func(), stop <-chan struct{}) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "newgen", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	reply := func(text string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	}
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		b, _ := json.Marshal(map[string]any{"arguments": req.Params.Arguments, "meta": req.Params.Meta})
		return reply(string(b)), nil
	})
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: obj}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		answer, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
		if !ok {
			return &mcp.CallToolResult{RequestState: "asked-once", InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{
				Message:         "Your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
			}}}, nil
		}
		return reply(fmt.Sprintf("%s %v (state %q)", answer.Action, answer.Content["name"], req.Params.RequestState)), nil
	})
	s.AddTool(&mcp.Tool{Name: "steps", InputSchema: obj}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := range 3 {
			if token := req.Params.GetProgressToken(); token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: 3})
			}
		}
		return reply("stepped"), nil
	})
	s.AddTool(&mcp.Tool{Name: "block", InputSchema: obj}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started()
		select {
		case <-ctx.Done():
			cancelled()
			return nil, ctx.Err()
		case <-stop:
			return reply("stopped"), nil
		}
	})
	return s
}

// serveNewgen serves newgenServer on stdin and stdout, recording what it
// reads in the file newgenRecordEnv names.
func serveNewgen() error {
	record, err := os.Create(os.Getenv(newgenRecordEnv))
	if err != nil {
		return err
	}
	defer record.Close()
	cancelled := func() { _ = os.WriteFile(os.Getenv(newgenCancelledEnv), nil, 0o600) }
	started := func() { _ = os.WriteFile(os.Getenv(newgenCancelledEnv)+".started", nil, 0o600) }
	in := struct {
		io.Reader
		io.Closer
	}{io.TeeReader(os.Stdin, record), os.Stdin}
	return newgenServer(started, cancelled, nil).Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: os.Stdout})
}

// newgen is newgenServer connected to a manager as "new" on protocol
// 2026-07-28, in a process of its own over stdio or in this one over
// streamable HTTP without sessions, with the host answering every
// question with the name "Ada".
type newgen struct {
	m         *manager.Manager
	ctx       context.Context
	wire      func() []wireCall // the tools/calls the server was sent so far
	started   func() bool       // whether a call of block runs on the server
	cancelled func() bool       // whether a call of block was cancelled on the server
}

// wireCall is a tools/call as the server read it: its id, the rest of
// the message without it, and over HTTP the headers that came with it.
type wireCall struct {
	id      string
	message map[string]any
	headers http.Header
}

func newgenOn(t *testing.T, transport string) *newgen {
	t.Helper()
	ng := &newgen{}
	var spec manager.Spec
	switch transport {
	case "stdio":
		self, err := os.Executable()
		require.NoError(t, err)
		dir := t.TempDir()
		record, cancelled := filepath.Join(dir, "record"), filepath.Join(dir, "cancelled")
		spec = manager.Spec{Transport: manager.TransportStdio, Command: []string{self}, Protocol: manager.Protocol20260728,
			Env: map[string]string{allocServerEnv: "newgen", newgenRecordEnv: record, newgenCancelledEnv: cancelled}}
		ng.wire = func() []wireCall {
			b, err := os.ReadFile(record)
			require.NoError(t, err)
			var calls []wireCall
			sc := bufio.NewScanner(bytes.NewReader(b))
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if c, ok := toolsCall(t, sc.Bytes(), nil); ok {
					calls = append(calls, c)
				}
			}
			return calls
		}
		ng.cancelled = func() bool { _, err := os.Stat(cancelled); return err == nil }
		// Cancelled only once its handler runs: the go-sdk's server drops
		// a cancellation that comes before it has taken the request.
		ng.started = func() bool { _, err := os.Stat(cancelled + ".started"); return err == nil }
	case "http":
		// A server without sessions cannot tell its handler that the
		// client cancelled a call (the go-sdk's own client's cancelling
		// does not reach it either): a call counts as cancelled on the
		// server once it was sent notifications/cancelled for the call.
		var mu sync.Mutex
		var calls []wireCall
		var cancelledIDs []string
		stop := make(chan struct{}) // ends the calls of block still running
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
			return newgenServer(func() {}, func() {}, stop)
		}, &mcp.StreamableHTTPOptions{Stateless: true})
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				body, _ := io.ReadAll(r.Body)
				var n struct {
					Method string
					Params struct{ RequestID any }
				}
				_ = json.Unmarshal(body, &n)
				mu.Lock()
				if c, ok := toolsCall(t, body, r.Header.Clone()); ok {
					calls = append(calls, c)
				} else if n.Method == "notifications/cancelled" {
					cancelledIDs = append(cancelledIDs, fmt.Sprint(n.Params.RequestID))
				}
				mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close) // after the manager's close, which ends its streams
		t.Cleanup(func() { close(stop) })
		spec = manager.Spec{Transport: manager.TransportHTTP, URL: hs.URL, Protocol: manager.Protocol20260728}
		ng.wire = func() []wireCall {
			mu.Lock()
			defer mu.Unlock()
			return append([]wireCall(nil), calls...)
		}
		ng.started = func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(calls) > 0 && calls[len(calls)-1].message["params"].(map[string]any)["name"] == "block"
		}
		ng.cancelled = func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(calls) > 0 && slices.Contains(cancelledIDs, calls[len(calls)-1].id)
		}
	}
	m := newManager(t, manager.Options{})
	m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"name": "Ada"})})
	ng.m = m
	require.NoError(t, m.Add("new", spec))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	st, err := m.Wait(ctx, "new", manager.StateConnected)
	require.NoError(t, err)
	require.Equal(t, "2026-07-28", st.Protocol)
	ng.ctx = ctx
	return ng
}

// toolsCall reads msg as a tools/call, if it is one.
func toolsCall(t *testing.T, msg []byte, headers http.Header) (wireCall, bool) {
	var m map[string]any
	if json.Unmarshal(msg, &m) != nil || m["method"] != "tools/call" {
		return wireCall{}, false
	}
	id := fmt.Sprint(m["id"])
	delete(m, "id")
	return wireCall{id: id, message: m, headers: headers}, true
}

// since is what the server was sent after the first n calls.
func (ng *newgen) since(n int) []wireCall { return ng.wire()[n:] }

// call makes the same call on the go-sdk path and on the raw path, and
// returns both results as the caller reads them, and what each sent.
func (ng *newgen) call(t *testing.T, tool string, args map[string]any) (want, got *mcp.CallToolResult, sdkSent, rawSent []wireCall) {
	t.Helper()
	opts := manager.CallOptions{Timeout: patience}
	n := len(ng.wire())
	var callArgs any // nil, not a nil map, when there are none
	var rawArgs json.RawMessage
	if args != nil {
		callArgs = args
		var err error
		rawArgs, err = json.Marshal(args)
		require.NoError(t, err)
	}
	want, err := ng.m.Call(ng.ctx, "new."+tool, callArgs, opts)
	require.NoError(t, err)
	sdkSent = ng.since(n)
	n += len(sdkSent)
	raw, err := ng.m.CallRaw(ng.ctx, "new", tool, rawArgs, nil, opts)
	require.NoError(t, err)
	got = &mcp.CallToolResult{}
	require.NoError(t, json.Unmarshal(raw, got), string(raw))
	rawSent = ng.since(n)
	return want, got, sdkSent, rawSent
}

// requireSameWire fails unless the raw path sent what the go-sdk sent,
// message for message (ids aside), with the same MCP headers over HTTP,
// and each under an id of the raw path's.
func requireSameWire(t *testing.T, sdkSent, rawSent []wireCall) {
	t.Helper()
	require.Len(t, rawSent, len(sdkSent))
	for i := range sdkSent {
		require.True(t, strings.HasPrefix(rawSent[i].id, rawrpc.IDPrefix), "round %d went on the raw path: id %s", i, rawSent[i].id)
		require.Equal(t, sdkSent[i].message, rawSent[i].message, "round %d", i)
		if sdkSent[i].headers != nil {
			for _, h := range []string{"Content-Type", "Accept", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Mcp-Session-Id"} {
				require.Equal(t, sdkSent[i].headers.Values(h), rawSent[i].headers.Values(h), "round %d: header %s", i, h)
			}
		}
	}
}

// A server spoken to on protocol 2026-07-28, over stdio or over HTTP
// without a session, is called on the raw path: what it is sent is what
// the go-sdk's client sends (the client's identity and the log level in
// _meta, the headers of the protocol), and the result is Call's.
func TestCallRawOnProtocol20260728(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			ng := newgenOn(t, transport)
			require.True(t, ng.m.RawCalls("new"))
			for _, args := range []map[string]any{{"text": "héllo"}, nil} {
				want, got, sdkSent, rawSent := ng.call(t, "echo", args)
				require.Equal(t, text(t, want), text(t, got))
				require.Equal(t, want.IsError, got.IsError)
				require.Len(t, sdkSent, 1)
				requireSameWire(t, sdkSent, rawSent)
			}
		})
	}
}

// When a server on 2026-07-28 asks for input before it answers, the raw
// path hands the call to the go-sdk's client from the round the server
// answered, without sending it again: the question is answered as on the
// go-sdk path (here by the host), the next round goes on the raw path as
// the go-sdk's client writes it, and the result is Call's.
func TestCallRawServesQuestionsOnProtocol20260728(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			ng := newgenOn(t, transport)
			want, got, sdkSent, rawSent := ng.call(t, "ask", map[string]any{})
			require.Equal(t, `accept Ada (state "asked-once")`, text(t, want))
			require.Equal(t, text(t, want), text(t, got))
			require.Len(t, sdkSent, 2, "the call and its answered round")
			requireSameWire(t, sdkSent, rawSent)
		})
	}
}

// Progress and cancellation on the raw path of a server on 2026-07-28
// work as on an older one: the progress reaches the caller before the
// call returns, and a cancelled call is cancelled on the server.
func TestCallRawProgressAndCancelOnProtocol20260728(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			ng := newgenOn(t, transport)
			var mu sync.Mutex
			var steps []float64
			opts := manager.CallOptions{Timeout: patience, Progress: func(p manager.Progress) {
				mu.Lock()
				steps = append(steps, p.Progress)
				mu.Unlock()
			}}
			n := len(ng.wire())
			raw, err := ng.m.CallRaw(ng.ctx, "new", "steps", nil, nil, opts)
			require.NoError(t, err)
			require.Contains(t, string(raw), "stepped")
			mu.Lock()
			require.Equal(t, []float64{1, 2, 3}, steps, "all of it before the call returned")
			mu.Unlock()
			sent := ng.since(n)
			require.Len(t, sent, 1)
			require.True(t, strings.HasPrefix(sent[0].id, rawrpc.IDPrefix))

			ctx, cancel := context.WithCancel(ng.ctx)
			done := make(chan error, 1)
			go func() {
				_, err := ng.m.CallRaw(ctx, "new", "block", nil, nil, manager.CallOptions{Timeout: patience})
				done <- err
			}()
			require.Eventually(t, ng.started, patience, 10*time.Millisecond, "the call reached the server")
			cancel()
			select {
			case err := <-done:
				require.True(t, errors.Is(err, manager.ErrCancelled), "%v", err)
			case <-time.After(patience):
				t.Fatal("the cancelled call did not return")
			}
			require.Eventually(t, ng.cancelled, patience, 10*time.Millisecond, "the call was cancelled on the server")
		})
	}
}
