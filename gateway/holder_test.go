package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// holderGateway is a gateway over srv, capped at two sessions, listening
// on loopback with the given session timeout; it returns its base URL.
func holderGateway(t *testing.T, src *fakeSource, timeout time.Duration) (*Gateway, string) {
	t.Helper()
	g := New(Options{Source: src, MaxSessions: 2})
	t.Cleanup(g.Close)
	srv, err := g.Listen(HTTPOptions{Addr: "127.0.0.1:0", SessionTimeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
	})
	return g, "http://" + srv.Addr()
}

// sessionlessClient connects a go-sdk client named name on 2026-07-28,
// which sends each request on its own, without a session, and does the
// round trips by hand.
func sessionlessClient(t *testing.T, base, name string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked this way")
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func (t *clientTable) holderCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.holders)
}

// Sessionless clients of more distinct names than the cap on sessions,
// one after the other, are all served: a name's holder goes once its call
// is answered, and the source is told to forget that client.
func TestHolderGoesWhenItsCallsEnd(t *testing.T) {
	src := newFakeSource(t)
	src.set("srv", manager.Spec{}, "echo")
	g, base := holderGateway(t, src, time.Minute)
	for i := range 5 {
		name := fmt.Sprintf("client-%d", i)
		cs := sessionlessClient(t, base, name)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "srv__echo", Arguments: map[string]any{}})
			if err == nil && res.IsError {
				err = errors.New(resultText(res))
			}
			assert.NoError(c, err, name)
		}, 10*time.Second, 20*time.Millisecond)
	}
	require.Eventually(t, func() bool { return g.clients.holderCount() == 0 }, 10*time.Second, 10*time.Millisecond)
	_, released := src.seen()
	require.Contains(t, released, "client-4/1 ("+publicID("sessionless\x00/mcp\x00client-4\x001\x00127.0.0.1")+")")
}

// bearer sends its token on every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// Two people whose sessionless clients have the same name and version
// (they told them apart by the token they show) have a holder each: what
// one has in flight never counts against the other's limits, and the
// source knows them as two callers; one person's requests share one.
func TestHolderPerSender(t *testing.T) {
	src := newFakeSource(t)
	src.set("srv", manager.Spec{}, "echo")
	_, base := holderGateway(t, src, time.Minute)
	for _, tok := range []string{"alice", "bob", "alice"} {
		c := mcp.NewClient(&mcp.Implementation{Name: "same", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer(tok)}}, nil)
		require.NoError(t, err)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "srv__echo", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.False(t, res.IsError, resultText(res))
		cancel()
		require.NoError(t, cs.Close())
	}
	callers, _ := src.seen()
	require.Len(t, callers, 3)
	require.NotEqual(t, callers[0], callers[1], "two people, one holder")
	require.Equal(t, callers[0], callers[2], "one person, two holders")
}

// A round trip a sessionless client never comes back to is given up after
// the session timeout: the server's question ends, which cancels the call
// upstream, and the holder goes.
func TestAbandonedSessionlessRoundTripExpires(t *testing.T) {
	src := newFakeSource(t)
	src.set("srv", manager.Spec{}, "elicit")
	ended := make(chan error, 1)
	src.answerWith(func(ctx context.Context, name string, opts manager.CallOptions) (*mcp.CallToolResult, error) {
		_, err := opts.Answerer.Elicit(ctx, ask.From{Server: "srv"}, elicitation)
		ended <- err
		return errorResult("asked in vain"), nil
	})
	g, base := holderGateway(t, src, 300*time.Millisecond)
	cs := sessionlessClient(t, base, "leaver")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "srv__elicit", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput(), "%s", resultText(res))
	select {
	case err := <-ended:
		require.ErrorIs(t, err, errExpired)
	case <-time.After(10 * time.Second):
		t.Fatal("the abandoned round trip was not given up")
	}
	require.Eventually(t, func() bool { return g.clients.holderCount() == 0 }, 10*time.Second, 10*time.Millisecond)
}

func (t *clientTable) isDraining() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.draining
}

// At the cap on sessions, counted in holders, a sessionless client of
// another name is refused while the others have round trips open. Once
// the gateway shuts down it is told that instead (waiting will not free a
// place), while the clients whose holders are draining still finish their
// round trips within the grace, and the shutdown then completes.
func TestHolderRefusedAtTheCapAndWhileDraining(t *testing.T) {
	src := newFakeSource(t)
	src.set("srv", manager.Spec{}, "elicit")
	src.answerWith(func(ctx context.Context, name string, opts manager.CallOptions) (*mcp.CallToolResult, error) {
		return outcomeResult(report(opts.Answerer.Elicit(ctx, ask.From{Server: "srv"}, elicitation))), nil
	})
	g, base := holderGateway(t, src, time.Minute)
	callTool := func(cs *mcp.ClientSession, state string, answers mcp.InputResponseMap) *mcp.CallToolResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "srv__elicit", Arguments: map[string]any{}, RequestState: state, InputResponses: answers})
		require.NoError(t, err)
		return res
	}
	const op = `server "srv": tools/call "elicit"`

	var asking []*mcp.ClientSession
	var waiting []*mcp.CallToolResult
	for _, name := range []string{"first", "second"} {
		cs := sessionlessClient(t, base, name)
		res := callTool(cs, "", nil)
		require.True(t, res.NeedsInput(), "%s: %s", name, resultText(res))
		asking, waiting = append(asking, cs), append(waiting, res)
	}
	third := sessionlessClient(t, base, "third")
	res := callTool(third, "", nil)
	require.True(t, res.IsError)
	require.Equal(t, errorText(fmt.Errorf("%s: %w", op, &LimitError{Limit: SessionLimit, Max: 2})), resultText(res))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- g.Shutdown(ctx) }()
	require.Eventually(t, g.clients.isDraining, 10*time.Second, time.Millisecond)
	res = callTool(third, "", nil)
	require.True(t, res.IsError)
	require.Equal(t, errorText(fmt.Errorf("%s: %w", op, ErrShuttingDown)), resultText(res))

	for i, cs := range asking {
		answers := mcp.InputResponseMap{}
		for id := range waiting[i].InputRequests {
			answers[id] = &mcp.ElicitResult{Action: "decline"}
		}
		done := callTool(cs, waiting[i].RequestState, answers)
		require.False(t, done.NeedsInput())
		require.False(t, done.IsError, resultText(done))
		var o outcome
		require.NoError(t, json.Unmarshal([]byte(resultText(done)), &o))
		assert.JSONEq(t, `{"action":"decline"}`, string(o.Answer))
	}
	select {
	case err := <-shut:
		require.NoError(t, err, "the holders drained within the grace")
	case <-time.After(10 * time.Second):
		t.Fatal("the shutdown did not end once the holders' calls did")
	}
}
