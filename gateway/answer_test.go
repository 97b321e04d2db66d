package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// What the fake server asks its client in these tests.
var (
	nameSchema  = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []any{"name"}}
	elicitation = &mcp.ElicitParams{Message: "What is your name?", RequestedSchema: nameSchema}
	urlElicit   = &mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/login", ElicitationID: "e1"}
	sampling    = &mcp.CreateMessageWithToolsParams{MaxTokens: 50, SystemPrompt: "Be brief.",
		Messages: []*mcp.SamplingMessageV2{{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: "Say hello"}}}}}
	samplingWithTools = &mcp.CreateMessageWithToolsParams{MaxTokens: 50, Tools: []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}},
		Messages: []*mcp.SamplingMessageV2{{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: "Use t"}}}}}
	projectRoot = &mcp.Root{URI: "file:///home/ada/project", Name: "project"}
)

// outcome is what the fake server got when it asked: an answer, or an
// error (NoAnswer if the answerer left it to the host).
type outcome struct {
	Answer   json.RawMessage `json:"answer,omitempty"`
	Error    string          `json:"error,omitempty"`
	NoAnswer bool            `json:"noAnswer,omitempty"`
}

func report(v any, err error) outcome {
	if err != nil {
		return outcome{Error: err.Error(), NoAnswer: errors.Is(err, ask.ErrNoAnswer)}
	}
	b, _ := json.Marshal(v)
	return outcome{Answer: b}
}

func outcomeResult(o any) *mcp.CallToolResult {
	b, _ := json.Marshal(o)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// askingServer answers calls of srv's tools as a server that asks its
// client would, through opts.Answerer, as the manager will; each result
// is the outcome as JSON ("all" asks all three at once: a map of them).
func askingServer(ctx context.Context, name string, opts manager.CallOptions) (*mcp.CallToolResult, error) {
	a := opts.Answerer
	if a == nil {
		return errorResult("the call came without an answerer"), nil
	}
	from := ask.From{Server: "srv", Client: opts.Client}
	switch strings.TrimPrefix(name, "srv.") {
	case "elicit":
		return outcomeResult(report(a.Elicit(ctx, from, elicitation))), nil
	case "elicit-url":
		return outcomeResult(report(a.Elicit(ctx, from, urlElicit))), nil
	case "sample":
		return outcomeResult(report(a.CreateMessage(ctx, from, sampling))), nil
	case "sample-tools":
		return outcomeResult(report(a.CreateMessage(ctx, from, samplingWithTools))), nil
	case "roots":
		return outcomeResult(report(a.ListRoots(ctx, from))), nil
	case "offers":
		return outcomeResult(a.Offers().String()), nil
	case "elicit-progress":
		// The server asked for progress: what the client reports on the
		// question comes back here, as the manager would send it on.
		var got []float64
		var mu sync.Mutex
		ctx = ask.WithReporter(ctx, func(_ context.Context, progress, _ float64, _ string) {
			mu.Lock()
			got = append(got, progress)
			mu.Unlock()
			select {
			case reported <- progress:
			default:
			}
		})
		p := *elicitation
		p.Meta = mcp.Meta{"progressToken": "from-the-server"}
		o := report(a.Elicit(ctx, from, &p))
		mu.Lock()
		defer mu.Unlock()
		return outcomeResult(map[string]any{"outcome": o, "progress": got}), nil
	case "all":
		var mu sync.Mutex
		all := map[string]outcome{}
		var wg sync.WaitGroup
		for kind, f := range map[string]func() outcome{
			"elicit": func() outcome { return report(a.Elicit(ctx, from, elicitation)) },
			"sample": func() outcome { return report(a.CreateMessage(ctx, from, sampling)) },
			"roots":  func() outcome { return report(a.ListRoots(ctx, from)) },
		} {
			wg.Go(func() {
				o := f()
				mu.Lock()
				all[kind] = o
				mu.Unlock()
			})
		}
		wg.Wait()
		return outcomeResult(all), nil
	}
	return errorResult("no tool " + name), nil
}

// askingGateway is a gateway over a fake server srv whose tools ask the
// client, served over HTTP (its base URL returned) and stdio.
func askingGateway(t *testing.T) (*Gateway, *fakeSource, string) {
	t.Helper()
	src := newFakeSource(t)
	src.set("srv", manager.Spec{}, "elicit", "elicit-url", "elicit-progress", "sample", "sample-tools", "roots", "offers", "all", "hold", "withdraw", "keep")
	src.answerWith(askingServer)
	g := newGateway(t, src)
	srv, err := g.Listen(HTTPOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
	})
	return g, src, "http://" + srv.Addr()
}

// The ways a client reaches the gateway in these tests, and the protocol
// each negotiates: a go-sdk client on stdio speaks 2026-07-28, on which
// the gateway cannot send it requests; over HTTP it falls back to
// 2025-11-25 (the gateway's sessions are stateful), as over SSE.
var transports = []struct {
	name, version string
}{
	{"stdio", "2026-07-28"},
	{"stdio 2025-11-25", "2025-11-25"},
	{"http", "2025-11-25"},
	{"http without the standalone stream", "2025-11-25"},
	{"http 2026-07-28", "2026-07-28"},
	{"sse", "2025-11-25"},
}

// dial connects a go-sdk client with opts to g's /mcp in the way named;
// it is closed when the test ends.
func dial(t *testing.T, g *Gateway, base, how string, opts *mcp.ClientOptions, roots ...*mcp.Root) *mcp.ClientSession {
	t.Helper()
	var tr mcp.Transport
	var version string
	switch how {
	case "stdio", "stdio 2025-11-25":
		if how != "stdio" {
			version = "2025-11-25"
		}
		inR, inW := io.Pipe()   // client → gateway
		outR, outW := io.Pipe() // gateway → client
		done := make(chan error, 1)
		go func() { done <- g.ServeStdio(context.Background(), inR, outW, "", "") }()
		t.Cleanup(func() {
			_ = inW.Close()
			_ = outR.Close()
			if err := <-done; !errors.Is(err, io.ErrClosedPipe) {
				assert.NoError(t, err, "ServeStdio")
			}
		})
		tr = &mcp.IOTransport{Reader: outR, Writer: inW}
	case "http":
		// A go-sdk client asks for 2026-07-28, where it is never sent a
		// request: the session of the older generation is asked for.
		tr, version = &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, "2025-11-25"
	case "http without the standalone stream":
		tr, version = &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true}, "2025-11-25"
	case "http 2026-07-28":
		tr = &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}
	case "sse":
		tr = &mcp.SSEClientTransport{Endpoint: base + "/sse"}
	default:
		t.Fatalf("no transport %q", how)
	}
	// An SSE client's session lives as long as the context it connected
	// with: this one ends with the test.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	bound := time.AfterFunc(10*time.Second, cancel)
	c := mcp.NewClient(&mcp.Implementation{Name: "answering", Version: "1"}, opts)
	c.AddRoots(roots...)
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err, "connect over %s", how)
	bound.Stop()
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// asked calls one of srv's tools and returns what the server got.
func asked(t *testing.T, cs *mcp.ClientSession, tool string, into any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "srv__" + tool, Arguments: map[string]any{}})
	require.NoError(t, err, "tools/call %s", tool)
	require.False(t, res.IsError, "tools/call %s: %s", tool, resultText(res))
	require.NoError(t, json.Unmarshal([]byte(resultText(res)), into), "tools/call %s: %s", tool, resultText(res))
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// answering is a client that answers every kind, recording what it was
// asked.
type answering struct {
	mu       sync.Mutex
	elicited []*mcp.ElicitParams
	sampled  []*mcp.CreateMessageParams
}

func (a *answering) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.mu.Lock()
			a.elicited = append(a.elicited, req.Params)
			a.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			a.mu.Lock()
			a.sampled = append(a.sampled, req.Params)
			a.mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "Hello!"}}, nil
		},
	}
}

// requireAnswered checks the answers the fake server got.
func requireAnswered(t *testing.T, got map[string]outcome) {
	t.Helper()
	for kind, want := range map[string]string{
		"elicit": `{"action":"accept","content":{"name":"Ada"}}`,
		"sample": `{"content":{"type":"text","text":"Hello!"},"model":"test-model","role":"assistant"}`,
		"roots":  `[{"uri":"file:///home/ada/project","name":"project"}]`,
	} {
		o := got[kind]
		require.Empty(t, o.Error, kind)
		require.JSONEq(t, want, string(o.Answer), kind)
	}
}

// A client that can answer elicitation, sampling and roots answers what a
// server asks during its call, on every transport and protocol: asked one
// at a time and all at once, the server gets the client's answers, and
// the client gets the server's requests as they were.
func TestClientAnswersWhatServersAsk(t *testing.T) {
	g, src, base := askingGateway(t)
	require.Equal(t, ask.All, src.answers, "the gateway declares at once that its clients may answer anything")
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			client := &answering{}
			cs := dial(t, g, base, tr.name, client.options(), projectRoot)
			require.Equal(t, tr.version, cs.InitializeResult().ProtocolVersion)

			one := map[string]outcome{}
			for _, kind := range []string{"elicit", "sample", "roots"} {
				var o outcome
				asked(t, cs, kind, &o)
				one[kind] = o
			}
			requireAnswered(t, one)
			var all map[string]outcome
			asked(t, cs, "all", &all)
			requireAnswered(t, all)
			var offers string
			asked(t, cs, "offers", &offers)
			assert.Equal(t, "elicitation+sampling+roots", offers)

			client.mu.Lock()
			defer client.mu.Unlock()
			require.Len(t, client.elicited, 2)
			e := client.elicited[0]
			assert.Equal(t, "What is your name?", e.Message)
			assert.Equal(t, "form", e.Mode)
			schema, _ := json.Marshal(e.RequestedSchema)
			assert.JSONEq(t, `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`, string(schema))
			require.Len(t, client.sampled, 2)
			s := client.sampled[0]
			assert.Equal(t, "Be brief.", s.SystemPrompt)
			assert.Equal(t, int64(50), s.MaxTokens)
			require.Len(t, s.Messages, 1)
			assert.Equal(t, "Say hello", s.Messages[0].Content.(*mcp.TextContent).Text)
		})
	}
}

// What a client did not declare it can answer is left to the host: the
// answerer returns ErrNoAnswer without asking the client (which would
// refuse, or be sent what it cannot take).
func TestClientThatCannotAnswerLeavesItToTheHost(t *testing.T) {
	g, _, base := askingGateway(t)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Run("declares nothing", func(t *testing.T) {
				cs := dial(t, g, base, tr.name, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
				var offers string
				asked(t, cs, "offers", &offers)
				assert.Equal(t, "none", offers)
				for _, kind := range []string{"elicit", "sample", "roots"} {
					var o outcome
					asked(t, cs, kind, &o)
					assert.True(t, o.NoAnswer, "%s: %+v", kind, o)
					assert.Contains(t, o.Error, "answering/1", "%s: the error names the client", kind)
				}
			})
			t.Run("form elicitation and plain sampling only", func(t *testing.T) {
				client := &answering{}
				cs := dial(t, g, base, tr.name, client.options())
				var offers string
				asked(t, cs, "offers", &offers)
				assert.Equal(t, "elicitation+sampling+roots", offers, "the SDK's client declares roots by default")
				for _, kind := range []string{"elicit-url", "sample-tools"} {
					var o outcome
					asked(t, cs, kind, &o)
					assert.True(t, o.NoAnswer, "%s: %+v", kind, o)
				}
				client.mu.Lock()
				defer client.mu.Unlock()
				assert.Empty(t, client.elicited, "the client was not asked")
				assert.Empty(t, client.sampled, "the client was not asked")
			})
		})
	}
}

// A request to the client ends when the server withdraws it, and when the
// client cancels the call it came with; the client is sent
// notifications/cancelled for it on the call's stream. (A client on
// 2026-07-28 is never sent a request: it has nothing to cancel.)
func TestClientRequestsEndWithTheServersAndTheCall(t *testing.T) {
	g, src, base := askingGateway(t)
	for _, how := range []string{"http", "stdio 2025-11-25"} {
		t.Run(how, func(t *testing.T) {
			started := make(chan struct{}, 1)
			ended := make(chan error, 1)    // how the client's handler ended
			answered := make(chan error, 1) // what the server got
			release := make(chan struct{})
			opts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				started <- struct{}{}
				select { // answers only when told to stop
				case <-ctx.Done():
					ended <- ctx.Err()
					return nil, ctx.Err()
				case <-release:
					return nil, errors.New("released")
				}
			}}
			src.answerWith(func(ctx context.Context, name string, opts manager.CallOptions) (*mcp.CallToolResult, error) {
				// The server's request has a life of its own, as the
				// manager's has: it is not the call's context.
				askCtx, withdraw := context.WithTimeout(context.Background(), 30*time.Second)
				defer withdraw()
				if name == "srv.withdraw" {
					go func() {
						<-started
						withdraw()
					}()
				}
				_, err := opts.Answerer.Elicit(askCtx, ask.From{Server: "srv"}, elicitation)
				answered <- err
				if name == "srv.withdraw" {
					// The call goes on after the server withdrew its request,
					// until the client has heard of it.
					select {
					case e := <-ended:
						ended <- e
					case <-time.After(5 * time.Second):
					}
				}
				return outcomeResult(report(nil, err)), nil
			})
			cs := dial(t, g, base, how, opts)
			t.Cleanup(func() { close(release) }) // before the client closes

			t.Run("the server withdraws", func(t *testing.T) {
				var o outcome
				asked(t, cs, "withdraw", &o)
				require.ErrorIs(t, <-answered, context.Canceled)
				select {
				case err := <-ended:
					require.ErrorIs(t, err, context.Canceled)
				case <-time.After(5 * time.Second):
					t.Fatal("the client's request was not cancelled")
				}
			})

			t.Run("the client cancels its call", func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() {
					<-started
					cancel()
				}()
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "srv__hold", Arguments: map[string]any{}})
				require.ErrorIs(t, err, context.Canceled)
				select {
				case err := <-answered:
					require.ErrorIs(t, err, context.Canceled, "the server's request is answered at once")
				case <-time.After(5 * time.Second):
					t.Fatal("the server's request outlived the call")
				}
				if how == "http" {
					// The go-sdk client closes the call's stream when it
					// cancels the call, and with it the way to tell it.
					return
				}
				select {
				case err := <-ended:
					require.ErrorIs(t, err, context.Canceled)
				case <-time.After(5 * time.Second):
					t.Fatal("the client's request outlived its call")
				}
			})
		})
	}
}

// A client on 2026-07-28 gets what the server asks as the input requests
// of its call's result and answers by calling again with the request
// state; a state that names no call of its own, or a retry without the
// answers, is an error, and a call it never comes back to ends with its
// session.
func TestRoundTripsOfTheNewProtocol(t *testing.T) {
	g, src, _ := askingGateway(t)
	returned := make(chan outcome, 1)
	src.answerWith(func(ctx context.Context, name string, opts manager.CallOptions) (*mcp.CallToolResult, error) {
		o := report(opts.Answerer.Elicit(ctx, ask.From{Server: "srv"}, elicitation))
		returned <- o
		return outcomeResult(o), nil
	})
	// A client that does the round trips by hand.
	cs := dial(t, g, "", "stdio", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked this way")
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	callAgain := func(state string, answers mcp.InputResponseMap) *mcp.CallToolResult {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "srv__elicit", Arguments: map[string]any{}, RequestState: state, InputResponses: answers})
		require.NoError(t, err)
		return res
	}

	res := callAgain("", nil)
	require.True(t, res.NeedsInput(), "%+v", res)
	require.NotEmpty(t, res.RequestState)
	require.Len(t, res.InputRequests, 1)
	var id string
	for k, r := range res.InputRequests {
		id = k
		require.IsType(t, &mcp.ElicitParams{}, r)
		assert.Equal(t, "What is your name?", r.(*mcp.ElicitParams).Message)
	}

	other := dial(t, g, "", "stdio", &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	stolen, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "srv__elicit", Arguments: map[string]any{}, RequestState: res.RequestState})
	require.NoError(t, err)
	require.True(t, stolen.IsError, "another session's state: %+v", stolen)
	assert.Contains(t, resultText(stolen), "request state")
	bogus := callAgain("not-a-state", nil)
	require.True(t, bogus.IsError)
	assert.Contains(t, resultText(bogus), "request state")

	done := callAgain(res.RequestState, mcp.InputResponseMap{id: &mcp.ElicitResult{Action: "decline"}})
	require.False(t, done.NeedsInput())
	var o outcome
	require.NoError(t, json.Unmarshal([]byte(resultText(done)), &o))
	assert.JSONEq(t, `{"action":"decline"}`, string(o.Answer))
	<-returned

	res = callAgain("", nil)
	require.True(t, res.NeedsInput())
	res = callAgain(res.RequestState, nil)
	require.False(t, res.NeedsInput())
	require.NoError(t, json.Unmarshal([]byte(resultText(res)), &o))
	assert.Contains(t, o.Error, "without answering", "a retry without the answer")
	<-returned

	res = callAgain("", nil)
	require.True(t, res.NeedsInput())
	require.NoError(t, cs.Close())
	select {
	case o := <-returned:
		assert.Contains(t, o.Error, errClientGone.Error(), "the question ends with the session")
	case <-time.After(5 * time.Second):
		t.Fatal("a call its client left waiting outlived the session")
	}
}

// Each client session's calls are made as one name, its own, for the
// whole session, however many clients share a name and version, and the
// source is told once, under that name, when the session ends: on DELETE
// over HTTP, when stdin closes on stdio, when the stream closes on SSE.
func TestEachClientIsNamedApartAndReleasedOnce(t *testing.T) {
	g, src, base := askingGateway(t)
	src.answerWith(nil) // plain answers
	sub := src.bus.Subscribe(events.SubscribeOptions{QueueSize: 1024})
	t.Cleanup(sub.Close)
	var calls atomic.Int64
	for _, tr := range transports {
		if tr.name == "http 2026-07-28" {
			// A sessionless client has no session to be told apart by,
			// nor one that ends: its calls go under its name and version
			// until the gateway shuts down (docs/gateway.md).
			continue
		}
		t.Run(tr.name, func(t *testing.T) {
			var labels []string
			var sessions []*mcp.ClientSession
			for range 2 {
				cs := dial(t, g, base, tr.name, nil)
				for range 2 {
					_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "srv__elicit", Arguments: map[string]any{}})
					require.NoError(t, err)
					calls.Add(1)
				}
				callers, _ := src.seen()
				require.Len(t, callers, int(calls.Load()))
				label := callers[len(callers)-1]
				require.Equal(t, label, callers[len(callers)-2], "one name for the session's calls")
				assert.True(t, strings.HasPrefix(label, "answering/1 ("), label)
				if strings.HasPrefix(tr.name, "http") {
					assert.Regexp(t, `\([0-9A-Z]{16}\)$`, label, "an HTTP client's label has a digest of its session id")
					assert.NotContains(t, label, cs.ID(), "the session id itself is a credential")
				}
				labels = append(labels, label)
				sessions = append(sessions, cs)
			}
			require.NotEqual(t, labels[0], labels[1], "two clients of the same name and version")
			for i, cs := range sessions {
				require.NoError(t, cs.Close())
				require.Eventually(t, func() bool {
					_, released := src.seen()
					return len(released) > 0 && released[len(released)-1] == labels[i]
				}, 10*time.Second, 5*time.Millisecond, "%s released", labels[i])
			}
		})
	}

	g.Close() // waits for every session's end
	callers, released := src.seen()
	want := map[string]int{}
	for _, c := range callers {
		want[c] = 1
	}
	got := map[string]int{}
	for _, r := range released {
		got[r]++
	}
	require.Equal(t, want, got, "every client released once, under the name its calls were made with")

	// The events name the clients as the calls did.
	connected := map[string]bool{}
	for {
		e, ok, err := sub.TryRecv()
		require.NoError(t, err)
		if !ok {
			break
		}
		if e.Kind == events.KindClientConnected {
			connected[e.Text("client")] = true
		}
	}
	for c := range want {
		assert.True(t, connected[c], "client_connected for %q", c)
	}
}

// The manager may ask a per-client session's client between its calls,
// with the answerer of its last call: the client is asked on its
// session, where it can be reached (on streamable HTTP that takes the
// standalone stream), and otherwise, as once it has left, it is left to
// the host.
func TestClientAskedBetweenItsCalls(t *testing.T) {
	g, src, base := askingGateway(t)
	kept := make(chan ask.Answerer, 1)
	src.answerWith(func(_ context.Context, _ string, opts manager.CallOptions) (*mcp.CallToolResult, error) {
		kept <- opts.Answerer
		return outcomeResult("kept"), nil
	})
	reachable := map[string]bool{"stdio": false, "stdio 2025-11-25": true, "http": true,
		"http without the standalone stream": false, "sse": true, "http 2026-07-28": false}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			client := &answering{}
			cs := dial(t, g, base, tr.name, client.options())
			var o string
			asked(t, cs, "keep", &o)
			a := <-kept
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			res, err := a.Elicit(ctx, ask.From{Server: "srv"}, elicitation)
			if reachable[tr.name] {
				require.NoError(t, err)
				assert.Equal(t, map[string]any{"name": "Ada"}, res.Content)
			} else {
				require.ErrorIs(t, err, ask.ErrNoAnswer)
			}

			_, released := src.seen()
			require.NoError(t, cs.Close())
			if tr.name != "http 2026-07-28" { // without a session, nothing ends but the gateway
				require.Eventually(t, func() bool {
					_, now := src.seen()
					return len(now) > len(released)
				}, 10*time.Second, 5*time.Millisecond, "released")
			}
			_, err = a.Elicit(ctx, ask.From{Server: "srv"}, elicitation)
			require.ErrorIs(t, err, ask.ErrNoAnswer, "once the client left")
		})
	}
}

// An HTTP client that goes quiet past the session timeout is released
// like one that said goodbye.
func TestHTTPSessionTimeoutReleasesTheClient(t *testing.T) {
	src := newFakeSource(t)
	src.set("srv", manager.Spec{}, "echo")
	g := newGateway(t, src)
	// Long enough that the client's first call comes within it on a
	// loaded machine, short enough for a test.
	srv, err := g.Listen(HTTPOptions{Addr: "127.0.0.1:0", SessionTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
	})
	cs := dial(t, g, "http://"+srv.Addr(), "http", nil)
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "srv__echo", Arguments: map[string]any{}})
	require.NoError(t, err)
	callers, _ := src.seen()
	require.Eventually(t, func() bool {
		_, released := src.seen()
		return slices.Equal(released, callers[:1])
	}, 10*time.Second, 10*time.Millisecond, "the quiet client released, once, as its call named it")
}

// reported gets each progress report the fake server's elicit-progress
// tool receives, so that the client answering it can wait for its report
// to arrive (a report racing the answer may come after the question is
// over, and is then rightly dropped).
var reported = make(chan float64, 16)

// A client answering a question may report progress on it, under the
// token it was given: on every transport the report reaches the server
// that asked (whose own token the client never sees).
func TestClientProgressOnQuestionsReachesTheServer(t *testing.T) {
	g, _, base := askingGateway(t)
	for _, tr := range transports {
		if tr.name == "http 2026-07-28" {
			// Not carried: the go-sdk's handler without sessions closes
			// the session it made for a notification as soon as it has
			// answered the POST, and the report is never handled.
			continue
		}
		t.Run(tr.name, func(t *testing.T) {
			var tokens []any
			var mu sync.Mutex
			opts := &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					token := req.Params.GetProgressToken()
					mu.Lock()
					tokens = append(tokens, token)
					mu.Unlock()
					if token != nil {
						if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 0.5}); err != nil {
							return nil, err
						}
						select { // answer once the report is through, as a long answer would be
						case <-reported:
						case <-time.After(5 * time.Second):
						}
					}
					return &mcp.ElicitResult{Action: "decline"}, nil
				},
			}
			cs := dial(t, g, base, tr.name, opts)
			var got struct {
				Outcome  outcome   `json:"outcome"`
				Progress []float64 `json:"progress"`
			}
			asked(t, cs, "elicit-progress", &got)
			require.Empty(t, got.Outcome.Error)
			require.Equal(t, []float64{0.5}, got.Progress, "the client's report did not reach the server")
			mu.Lock()
			defer mu.Unlock()
			require.Len(t, tokens, 1)
			require.NotEqual(t, "from-the-server", tokens[0], "the client is given a token of the gateway's")
		})
	}
}

// soleness makes src's tool answer whether its caller was its answer's
// only client, and returns how a client asks that.
func soleness(t *testing.T, src *fakeSource) func(*mcp.ClientSession) string {
	src.answerWith(func(_ context.Context, _ string, opts manager.CallOptions) (*mcp.CallToolResult, error) {
		sole, ok := opts.Answerer.(ask.SoleClient)
		return outcomeResult(fmt.Sprint(ok && sole.SoleClient())), nil
	})
	return func(cs *mcp.ClientSession) string {
		var o string
		asked(t, cs, "sole", &o)
		return o
	}
}

// A client is its answer's only client while no other client is
// connected to the gateway: what a shared server asks outside any call
// may then go to it (ask.SoleClient). Once another connects it is not,
// and once that one leaves it is again.
func TestClientIsSoleWhileAlone(t *testing.T) {
	g, src, base := askingGateway(t)
	alone := soleness(t, src)
	first := dial(t, g, base, "http", nil)
	require.Equal(t, "true", alone(first))
	second := dial(t, g, base, "http", nil)
	require.Equal(t, "false", alone(first))
	require.Equal(t, "false", alone(second))
	require.NoError(t, second.Close())
	require.Eventually(t, func() bool { return alone(first) == "true" }, 10*time.Second, 10*time.Millisecond)
}

// A sessionless client counts as one while it calls, however many of its
// requests are open (here a subscriptions/listen beside the call), so it
// is its answer's only client while alone.
func TestSessionlessClientIsSoleWhileAlone(t *testing.T) {
	g, src, base := askingGateway(t)
	alone := soleness(t, src)
	listening := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}}
	first := dial(t, g, base, "http 2026-07-28", listening)
	require.Equal(t, "2026-07-28", first.InitializeResult().ProtocolVersion)
	require.Equal(t, "true", alone(first))
	second := dial(t, g, base, "http", nil)
	require.Equal(t, "false", alone(first))
	require.NoError(t, second.Close())
	require.Eventually(t, func() bool { return alone(first) == "true" }, 10*time.Second, 10*time.Millisecond)
}

// A client of the legacy SSE transport that asks server/discover first
// (as the go-sdk's does) is refused, however soon it asks, and so
// initializes on the generation that transport carries: the go-sdk alone
// sometimes offered it 2026-07-28 when it asked before the session had
// worked out its versions.
func TestSSEDiscoverRefused(t *testing.T) {
	_, _, base := askingGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := (&mcp.SSEClientTransport{Endpoint: base + "/sse"}).Connect(ctx)
	require.NoError(t, err)
	defer conn.Close()
	id, err := jsonrpc.MakeID(float64(1))
	require.NoError(t, err)
	meta := map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "quick", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	params, err := json.Marshal(map[string]any{"_meta": meta})
	require.NoError(t, err)
	require.NoError(t, conn.Write(ctx, &jsonrpc.Request{ID: id, Method: "server/discover", Params: params}))
	msg, err := conn.Read(ctx)
	require.NoError(t, err)
	resp, ok := msg.(*jsonrpc.Response)
	require.True(t, ok, "%T", msg)
	var werr *jsonrpc.Error
	require.ErrorAs(t, resp.Error, &werr, "server/discover over SSE answered %s", resp.Result)
	require.Equal(t, int64(jsonrpc.CodeMethodNotFound), werr.Code)
}
