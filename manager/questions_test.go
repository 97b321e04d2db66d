package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// A question a shared server sends after the call that led to it ended
// (client B's) is never shown to another client (A) whose unrelated call
// is in flight: A's user would see B's data, and A's answer would be
// credited to B. The server is told the two ways out. With questions =
// "caller" the server is trusted, and A, the only client in flight, is
// asked; as it is when A is the only client the host serves.
func TestLateQuestionIsNotShownToAnotherClient(t *testing.T) {
	for _, tt := range []struct {
		name      string
		extra     map[string]any
		sole      bool
		wantAsked bool
	}{
		{name: "shared", extra: nil},
		{name: "questions = caller", extra: map[string]any{"questions": "caller"}, wantAsked: true},
		{name: "the only client", sole: true, wantAsked: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, tl := procManager(t)
			m.CallersAnswer(ask.Elicitation) // as a gateway does, before servers connect
			require.NoError(t, m.Add("a", asker(t, tt.extra, "--hang-tool=hang")))
			waitState(t, m, "a", manager.StateConnected)
			var asked atomic.Int32
			var alice ask.Answerer = &answerer{offers: ask.Elicitation, elicit: func(context.Context, ask.From, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				asked.Add(1)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "alice"}}, nil
			}}
			if tt.sole {
				alice = soleAnswerer{alice.(*answerer)}
			}
			bob := &answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"name": "bob"})}

			// Bob's call asks for later, and ends.
			bobsForm := map[string]any{"message": "bob's private data", "requestedSchema": form["requestedSchema"]}
			_, err := m.Call(context.Background(), "a.ask_later", map[string]any{"method": "elicitation/create", "params": bobsForm},
				manager.CallOptions{Client: "bob", Answerer: bob, Timeout: patience})
			require.NoError(t, err)
			// Alice's call is in flight when the server asks.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			hung := make(chan error, 1)
			go func() {
				_, err := m.Call(ctx, "a.hang", nil, manager.CallOptions{Client: "alice", Answerer: alice, Timeout: patience})
				hung <- err
			}()
			require.Eventually(t, func() bool {
				mt, err := m.Metrics("a")
				return err == nil && mt.InFlight == 1
			}, patience, 5*time.Millisecond)
			_, err = m.Call(context.Background(), "a.release", nil, manager.CallOptions{Timeout: patience})
			require.NoError(t, err)
			e := only(tl.until("a", events.KindElicitation, patience), events.KindElicitation)[0]
			cancel()
			<-hung

			answers := lateAnswers(t, m)
			if tt.wantAsked {
				require.Equal(t, int32(1), asked.Load())
				require.Equal(t, "alice", answers[0].Result["content"].(map[string]any)["name"])
				return
			}
			require.Zero(t, asked.Load(), "alice was shown bob's form")
			require.NotNil(t, answers[0].Error)
			msg := answers[0].Error.Message
			require.Contains(t, msg, `session = "per_client"`)
			require.Contains(t, msg, `questions = "caller"`)
			require.Contains(t, msg, "one client has calls in flight")
			require.NotContains(t, msg, "no client that supports it has a call in flight")
			require.NotContains(t, msg, "alice", "the error names another client")
			require.Equal(t, 1, e.Fields["clients_not_asked"])
		})
	}
}

// lateAnswers is what fakemcp's released requests got back, waiting until
// there is one.
func lateAnswers(t *testing.T, m *manager.Manager) []askResult {
	t.Helper()
	var got []askResult
	require.Eventually(t, func() bool {
		res, err := m.Call(context.Background(), "a.late_answers", nil, manager.CallOptions{Timeout: patience})
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal([]byte(text(t, res)), &got))
		return len(got) > 0
	}, patience, 10*time.Millisecond)
	return got
}

// Over streamable HTTP a server asks about a call on that call's response
// stream, which ties the question to the call's client: it is asked of
// that client even while another client's call is in flight on the same
// session, and never of the other; a raw call's (Manager.CallRaw) as
// Call's, its answer POSTed back on the session.
func TestQuestionOnACallsStreamGoesToItsClient(t *testing.T) {
	for _, raw := range []bool{false, true} {
		t.Run(fmt.Sprintf("raw %v", raw), func(t *testing.T) { questionOnACallsStreamGoesToItsClient(t, raw) })
	}
}

func questionOnACallsStreamGoesToItsClient(t *testing.T, raw bool) {
	noZombies(t)
	release := make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "askme", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who are you?", RequestedSchema: form["requestedSchema"]})
			if err != nil {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content["name"].(string)}}}, nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close) // after the manager's close, which ends its streams
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // a failed test's wait ends too

	m := newManager(t, manager.Options{})
	m.CallersAnswer(ask.Elicitation)
	require.NoError(t, m.Add("a", decode(t, map[string]any{"url": hs.URL})))
	waitState(t, m, "a", manager.StateConnected)

	var otherAsked atomic.Int32
	other := &answerer{offers: ask.Elicitation, elicit: func(context.Context, ask.From, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		otherAsked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "the other client"}}, nil
	}}
	waited := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "a.wait", nil, manager.CallOptions{Client: "other", Answerer: other, Timeout: patience})
		waited <- err
	}()
	require.Eventually(t, func() bool {
		mt, err := m.Metrics("a")
		return err == nil && mt.InFlight == 1
	}, patience, 5*time.Millisecond)

	mine := &answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"name": "the caller"})}
	opts := manager.CallOptions{Client: "caller", Answerer: mine, Timeout: patience}
	var res *mcp.CallToolResult
	var err error
	if raw {
		require.True(t, m.RawCalls("a"))
		var out json.RawMessage
		out, err = m.CallRaw(context.Background(), "a", "askme", nil, nil, opts)
		require.NoError(t, err)
		res = &mcp.CallToolResult{}
		require.NoError(t, json.Unmarshal(out, res), string(out))
	} else {
		res, err = m.Call(context.Background(), "a.askme", nil, opts)
	}
	require.NoError(t, err)
	require.False(t, res.IsError, "%s", text(t, res))
	require.Equal(t, "the caller", text(t, res))
	require.Zero(t, otherAsked.Load())
	free()
	require.NoError(t, <-waited)
}
