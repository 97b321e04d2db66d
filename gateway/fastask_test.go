package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// rawSource is a fakeSource whose servers the raw path calls: each raw
// call is answered by callRaw, as a server behind the manager would.
type rawSource struct {
	*fakeSource
	callRaw func(ctx context.Context, opts manager.CallOptions) (json.RawMessage, error)
}

func (r *rawSource) RawCalls(string) bool { return true }

func (r *rawSource) CallRaw(ctx context.Context, _, _ string, _, _ json.RawMessage, opts manager.CallOptions) (json.RawMessage, error) {
	return r.callRaw(ctx, opts)
}

// askingRaw is a rawSource whose tool srv.ask asks the client a form and
// hands what it got to the test, then answers with then's result.
func askingRaw(t *testing.T, got chan<- error, then func(ctx context.Context) (json.RawMessage, error)) (*rawSource, string) {
	t.Helper()
	src := &rawSource{fakeSource: newFakeSource(t)}
	src.set("srv", manager.Spec{}, "ask")
	src.callRaw = func(ctx context.Context, opts manager.CallOptions) (json.RawMessage, error) {
		_, err := opts.Answerer.Elicit(ctx, ask.From{Server: "srv"}, elicitation)
		got <- err
		return then(ctx)
	}
	g := New(Options{Source: src, FastPath: "on"})
	t.Cleanup(g.Close)
	srv, err := g.Listen(HTTPOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
	})
	return src, "http://" + srv.Addr() + "/mcp"
}

// answered is a raw result a server sends.
func answered(text string) (json.RawMessage, error) {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	return b, nil
}

// rawPost posts body to url with the session's headers; the response is
// the caller's to read and close.
func rawPost(t *testing.T, ctx context.Context, url, body string, session map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range session {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	return resp
}

// rawAskSession initializes, by hand, a session of a client on
// 2025-11-25 that can answer forms, and returns its requests' headers.
func rawAskSession(t *testing.T, ctx context.Context, url string) map[string]string {
	t.Helper()
	resp := rawPost(t, ctx, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"0"}}}`, nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	resp = rawPost(t, ctx, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session)
	resp.Body.Close()
	require.Less(t, resp.StatusCode, 300)
	return session
}

// rpcMessage is a JSON-RPC message as it comes on an event stream.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// nextEvent reads the next message of an event stream.
func nextEvent(t *testing.T, br *bufio.Reader) rpcMessage {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "the stream ended before its next message")
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var m rpcMessage
			require.NoError(t, json.Unmarshal([]byte(data), &m), data)
			return m
		}
	}
}

const askCall = `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"srv__ask","arguments":{}}}`

// startAsked makes the call of srv.ask on the fast path and returns its
// stream, read up to the form the server asks, and that question's id.
func startAsked(t *testing.T, ctx context.Context, url string, session map[string]string) (*bufio.Reader, json.RawMessage) {
	t.Helper()
	resp := rawPost(t, ctx, url, askCall, session)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	br := bufio.NewReader(resp.Body)
	q := nextEvent(t, br)
	require.Equal(t, "elicitation/create", q.Method)
	return br, q.ID
}

// A client's answer to a server's question on a fast call that is not a
// JSON-RPC result or error gives the server a clear error at once, and
// the call completes with what the server then answers: the question
// does not wait for an answer that has come.
func TestFastQuestionMalformedAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         func(t *testing.T, err error)
	}{{
		name:   "an error that is not an object",
		answer: `"error":"no"`,
		want: func(t *testing.T, err error) {
			var je *jsonrpc.Error
			require.ErrorAs(t, err, &je)
			assert.Equal(t, int64(jsonrpc.CodeInvalidRequest), je.Code)
		},
	}, {
		name:   "neither a result nor an error",
		answer: `"answer":{"action":"accept"}`,
		want: func(t *testing.T, err error) {
			var je *jsonrpc.Error
			require.ErrorAs(t, err, &je)
			assert.Equal(t, int64(jsonrpc.CodeInvalidRequest), je.Code)
		},
	}, {
		name:   "a result that is not the question's",
		answer: `"result":"accept"`,
		want: func(t *testing.T, err error) {
			var te *json.UnmarshalTypeError
			require.ErrorAs(t, err, &te)
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan error, 1)
			_, url := askingRaw(t, got, func(context.Context) (json.RawMessage, error) { return answered("heard") })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			session := rawAskSession(t, ctx, url)
			stream, qid := startAsked(t, ctx, url, session)

			resp := rawPost(t, ctx, url, `{"jsonrpc":"2.0","id":`+string(qid)+`,`+tc.answer+`}`, session)
			resp.Body.Close()
			require.Equal(t, http.StatusAccepted, resp.StatusCode, "the answer is taken")
			select {
			case err := <-got:
				tc.want(t, err)
			case <-ctx.Done():
				t.Fatal("the server's question still waits for an answer the client sent")
			}
			final := nextEvent(t, stream)
			require.JSONEq(t, `"c-1"`, string(final.ID))
			require.Contains(t, string(final.Result), "heard")
		})
	}
}

// A question of a fast call ends when the call does (here the client
// cancels the call): the server's question returns at once, saying it
// was cancelled and why, and the client is told on the call's stream,
// with the reason, before the call's answer.
func TestFastQuestionEndsWithTheCall(t *testing.T) {
	got := make(chan error, 1)
	_, url := askingRaw(t, got, func(ctx context.Context) (json.RawMessage, error) { return nil, context.Cause(ctx) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	session := rawAskSession(t, ctx, url)
	stream, qid := startAsked(t, ctx, url, session)

	resp := rawPost(t, ctx, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1","reason":"changed my mind"}}`, session)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	select {
	case err := <-got:
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, errCallCancelled, "the server hears why")
	case <-ctx.Done():
		t.Fatal("the question outlived the call")
	}
	note := nextEvent(t, stream)
	require.Equal(t, "notifications/cancelled", note.Method)
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	require.NoError(t, json.Unmarshal(note.Params, &p))
	require.JSONEq(t, string(qid), string(p.RequestID))
	require.Equal(t, errCallCancelled.Error(), p.Reason, "the client hears why")
	final := nextEvent(t, stream)
	require.JSONEq(t, `"c-1"`, string(final.ID))
	require.Contains(t, string(final.Result), `"isError":true`)
}

// A fast call that has written on its response (here a server's
// question) is answered by the fast path whatever its call returns: were
// it handed to the go-sdk, the tool would run a second time and its
// answer be a second response on the same stream.
func TestFastCallThatHasWrittenNeverFallsBack(t *testing.T) {
	got := make(chan error, 1)
	src, url := askingRaw(t, got, func(context.Context) (json.RawMessage, error) { return nil, manager.ErrNotRaw })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	session := rawAskSession(t, ctx, url)
	stream, qid := startAsked(t, ctx, url, session)
	resp := rawPost(t, ctx, url, `{"jsonrpc":"2.0","id":`+string(qid)+`,"result":{"action":"decline"}}`, session)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.NoError(t, <-got)

	final := nextEvent(t, stream)
	require.JSONEq(t, `"c-1"`, string(final.ID))
	require.Contains(t, string(final.Result), `"isError":true`)
	rest, err := io.ReadAll(stream)
	require.NoError(t, err)
	require.Empty(t, strings.TrimSpace(string(rest)), "one answer on the response")
	callers, _ := src.seen()
	require.Empty(t, callers, "the go-sdk path did not run the tool again")
}

// Over stdio, a call the fast path took but the raw path turns down (its
// server reconnected on another protocol meanwhile) is handed to the
// go-sdk, which answers it, once; the session serves calls as before
// after it.
func TestStdioFastCallHandedToTheSDK(t *testing.T) {
	src := &rawSource{fakeSource: newFakeSource(t)}
	src.set("srv", manager.Spec{}, "echo")
	tried := make(chan struct{}, 10)
	src.callRaw = func(context.Context, manager.CallOptions) (json.RawMessage, error) {
		tried <- struct{}{}
		return nil, manager.ErrNotRaw
	}
	g := New(Options{Source: src, FastPath: "on"})
	t.Cleanup(g.Close)
	cs := dial(t, g, "", "stdio 2025-11-25", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := cs.ListTools(ctx, nil) // the client's mode is chosen: its calls may take the fast path
	require.NoError(t, err)
	for i := range 2 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "srv__echo", Arguments: map[string]any{}})
		require.NoError(t, err, "call %d", i)
		require.False(t, res.IsError, resultText(res))
		require.Equal(t, "srv.echo", resultText(res), "the go-sdk path's answer")
	}
	require.Len(t, tried, 2, "each call went the fast path first")
	callers, _ := src.seen()
	require.Len(t, callers, 2, "the go-sdk path ran each call once")
	require.Zero(t, g.fastServed.Load())
}
