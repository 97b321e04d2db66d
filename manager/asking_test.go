package manager_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// answerer is an ask.Answerer whose answers the test sets.
type answerer struct {
	offers ask.Kind
	elicit func(ctx context.Context, from ask.From, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	sample func(ctx context.Context, from ask.From, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	roots  []*mcp.Root
}

func (a *answerer) Offers() ask.Kind { return a.offers }

func (a *answerer) Elicit(ctx context.Context, from ask.From, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if a.elicit == nil {
		return nil, ask.ErrNoAnswer
	}
	return a.elicit(ctx, from, p)
}

func (a *answerer) CreateMessage(ctx context.Context, from ask.From, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if a.sample == nil {
		return nil, ask.ErrNoAnswer
	}
	return a.sample(ctx, from, p)
}

func (a *answerer) ListRoots(context.Context, ask.From) ([]*mcp.Root, error) {
	if a.roots == nil {
		return nil, ask.ErrNoAnswer
	}
	return a.roots, nil
}

// accept answers every form with the given content.
func accept(content map[string]any) func(context.Context, ask.From, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return func(context.Context, ask.From, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}
}

// asker declares fakemcp --ask, which asks its client whatever a call of
// its tool "ask" says, the way servers did before 2026-07-28.
func asker(t *testing.T, extra map[string]any, flags ...string) manager.Spec {
	cmd := []any{fakemcptest.Build(t), "--ask"}
	for _, f := range flags {
		cmd = append(cmd, f)
	}
	raw := map[string]any{"command": cmd}
	for k, v := range extra {
		raw[k] = v
	}
	return decode(t, raw)
}

// askResult is what fakemcp's ask tool reports: the client's answer.
type askResult struct {
	Result map[string]any `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func askVia(t *testing.T, m *manager.Manager, opts manager.CallOptions, method string, params map[string]any) askResult {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = patience
	}
	res, err := m.Call(context.Background(), "a.ask", map[string]any{"method": method, "params": params}, opts)
	require.NoError(t, err)
	var r askResult
	require.NoError(t, json.Unmarshal([]byte(text(t, res)), &r), "ask answered %q", text(t, res))
	return r
}

var form = map[string]any{
	"message": "Who are you?",
	"requestedSchema": map[string]any{
		"type":       "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "age": map[string]any{"type": "integer", "minimum": 0}},
		"required":   []any{"name"},
	},
}

// capabilities returns the capabilities server's client declared.
func capabilities(t *testing.T, m *manager.Manager, server string) map[string]any {
	t.Helper()
	res, err := m.Call(context.Background(), server+".capabilities", nil, manager.CallOptions{Timeout: patience})
	require.NoError(t, err)
	var caps map[string]any
	require.NoError(t, json.Unmarshal([]byte(text(t, res)), &caps))
	return caps
}

// Nothing is declared that nobody can answer: a server then sees a client
// without elicitation, sampling or roots (and hides what needs them).
func TestNoCapabilityWithoutAnswerer(t *testing.T) {
	m, _ := procManager(t)
	require.NoError(t, m.Add("a", asker(t, nil)))
	require.Empty(t, capabilities(t, m, "a"))
}

// The host's answerer answers a form; the server gets exactly that, and
// the event says who answered and how, never with what.
func TestHostAnswersElicitation(t *testing.T) {
	m, tl := procManager(t)
	m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: func(_ context.Context, from ask.From, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if p.Mode == "url" {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"password": "typed at the site"}}, nil
		}
		if from.Server != "a" || p.Message != "Who are you?" {
			return nil, ask.ErrNoAnswer
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Secret", "age": 36}}, nil
	}})
	require.NoError(t, m.Add("a", asker(t, nil)))
	require.Contains(t, capabilities(t, m, "a"), "elicitation")
	require.NotContains(t, capabilities(t, m, "a"), "sampling")

	r := askVia(t, m, manager.CallOptions{}, "elicitation/create", form)
	require.Nil(t, r.Error)
	require.Equal(t, "accept", r.Result["action"])
	require.Equal(t, map[string]any{"name": "Ada Secret", "age": 36.0}, r.Result["content"])

	e := only(tl.until("a", events.KindElicitation, patience), events.KindElicitation)[0]
	require.Equal(t, "host", e.Fields["answered_by"])
	defer func() {
		r := askVia(t, m, manager.CallOptions{}, "elicitation/create", map[string]any{"mode": "url", "url": "https://example.com/x", "message": "go", "elicitationId": "e1"})
		require.Nil(t, r.Error)
		require.Equal(t, "accept", r.Result["action"])
		require.NotContains(t, r.Result, "content", "a URL's answer carries no content")
	}()
	require.Equal(t, "accept", e.Fields["action"])
	require.Equal(t, "form", e.Fields["mode"])
	b, _ := json.Marshal(e.Fields)
	require.NotContains(t, string(b), "Ada Secret", "the event shows the answer")
}

// The caller whose call is in flight answers first; when it cannot (its
// client lacks the capability), the host does.
func TestCallerAnswersBeforeHost(t *testing.T) {
	m, tl := procManager(t)
	m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"name": "from host"})})
	require.NoError(t, m.Add("a", asker(t, nil)))

	caller := &answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"name": "from caller"})}
	r := askVia(t, m, manager.CallOptions{Client: "c1", Answerer: caller}, "elicitation/create", form)
	require.Equal(t, map[string]any{"name": "from caller"}, r.Result["content"])
	e := only(tl.until("a", events.KindElicitation, patience), events.KindElicitation)[0]
	require.Equal(t, "client", e.Fields["answered_by"])
	require.Equal(t, "c1", e.Fields["client"])

	unable := &answerer{offers: ask.Elicitation} // its client has no elicitation
	r = askVia(t, m, manager.CallOptions{Client: "c2", Answerer: unable}, "elicitation/create", form)
	require.Equal(t, map[string]any{"name": "from host"}, r.Result["content"])
}

// An answer that does not fit the requested form is not sent: the server
// gets an error naming the field.
func TestElicitationAnswerChecked(t *testing.T) {
	m, tl := procManager(t)
	m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"age": -1})})
	require.NoError(t, m.Add("a", asker(t, nil)))
	r := askVia(t, m, manager.CallOptions{}, "elicitation/create", form)
	require.NotNil(t, r.Error)
	require.Contains(t, r.Error.Message, "does not fit the requested form")
	require.Contains(t, r.Error.Message, "name")
	e := only(tl.until("a", events.KindElicitation, patience), events.KindElicitation)[0]
	require.Contains(t, e.Fields["error"], "does not fit")
}

// A valid form the SDK's own check refuses (a titled choice without a
// title) still reaches the answerer: mcpvisor checks the answer instead.
func TestElicitationFormPassedUntouched(t *testing.T) {
	m, _ := procManager(t)
	var got any
	m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: func(_ context.Context, _ ask.From, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		got = p.RequestedSchema
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"color": "red"}}, nil
	}})
	require.NoError(t, m.Add("a", asker(t, nil)))
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"color": map[string]any{"type": "string", "oneOf": []any{map[string]any{"const": "red"}, map[string]any{"const": "blue"}}},
	}}
	r := askVia(t, m, manager.CallOptions{}, "elicitation/create", map[string]any{"message": "Pick", "requestedSchema": schema})
	require.Nil(t, r.Error, "%+v", r.Error)
	require.Equal(t, "accept", r.Result["action"])
	require.NotNil(t, got)
}

// With nobody to answer, the server gets the protocol's error saying so;
// a handler that never answers is bounded by the server's request timeout.
func TestUnansweredRequests(t *testing.T) {
	m, tl := procManager(t)
	m.CallersAnswer(ask.Elicitation | ask.Sampling) // declared, but this call has no answerer
	require.NoError(t, m.Add("a", asker(t, map[string]any{"timeouts": map[string]any{"request": "500ms"}})))
	r := askVia(t, m, manager.CallOptions{Timeout: patience}, "elicitation/create", form)
	require.NotNil(t, r.Error)
	require.Equal(t, -32602, r.Error.Code)
	require.Contains(t, r.Error.Message, `nobody can answer elicitation for server "a"`)

	block := make(chan struct{})
	defer close(block)
	m.SetAnswerer(&answerer{offers: ask.Sampling, sample: func(ctx context.Context, _ ask.From, _ *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-block:
			return nil, ask.ErrNoAnswer
		}
	}})
	// Bounded by the server's request timeout (the error names it), not
	// the call's.
	r = askVia(t, m, manager.CallOptions{Timeout: patience}, "sampling/createMessage", map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "hi"}}}, "maxTokens": 5})
	require.NotNil(t, r.Error)
	require.Contains(t, r.Error.Message, "no answer to sampling within 500ms (timeouts.request")
	e := only(tl.until("a", events.KindElicitation, patience), events.KindElicitation)
	require.Contains(t, e[0].Fields["error"], "nobody can answer")
}

// Sampling goes to the answerer; the event names the model, never the
// conversation.
func TestHostAnswersSampling(t *testing.T) {
	m, tl := procManager(t)
	m.SetAnswerer(&answerer{offers: ask.Sampling, sample: func(_ context.Context, _ ask.From, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
		msg := p.Messages[0].Content[0].(*mcp.TextContent).Text
		return &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "test-model",
			Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(msg)}}}, nil
	}})
	require.NoError(t, m.Add("a", asker(t, nil)))
	require.Contains(t, capabilities(t, m, "a"), "sampling")
	r := askVia(t, m, manager.CallOptions{}, "sampling/createMessage", map[string]any{
		"messages":  []any{map[string]any{"role": "user", "content": map[string]any{"type": "text", "text": "private words"}}},
		"maxTokens": 10,
	})
	require.Nil(t, r.Error, "%+v", r.Error)
	require.Equal(t, "test-model", r.Result["model"])
	require.Equal(t, "PRIVATE WORDS", r.Result["content"].(map[string]any)["text"])
	e := only(tl.until("a", events.KindSampling, patience), events.KindSampling)[0]
	require.Equal(t, "test-model", e.Fields["model"])
	b, _ := json.Marshal(e.Fields)
	require.NotContains(t, string(b), "private words")
}

// A server's own roots come before the host's; a change of the host's
// roots is announced to connected servers with roots/list_changed.
func TestRoots(t *testing.T) {
	m, _ := procManager(t)
	host := &answerer{offers: ask.Roots, roots: []*mcp.Root{{URI: "file:///host"}}}
	m.SetAnswerer(host)
	record := filepath.Join(t.TempDir(), "record")
	require.NoError(t, m.Add("a", asker(t, map[string]any{"roots": []any{"file:///srv/a"}})))
	require.NoError(t, m.Add("b", decode(t, map[string]any{"command": []any{fakemcptest.Build(t), "--ask", "--record=" + record}})))
	r := askVia(t, m, manager.CallOptions{}, "roots/list", nil)
	require.Equal(t, []any{map[string]any{"uri": "file:///srv/a"}}, r.Result["roots"])

	res, err := m.Call(context.Background(), "b.ask", map[string]any{"method": "roots/list"}, manager.CallOptions{Timeout: patience})
	require.NoError(t, err)
	require.Contains(t, text(t, res), "file:///host")
	require.Contains(t, capabilities(t, m, "b"), "roots")

	m.RootsChanged()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		b, _ := os.ReadFile(record)
		assert.Contains(c, string(b), "notifications/roots/list_changed", "no roots/list_changed reached the server")
	}, patience, 10*time.Millisecond)
}

// On a shared session a request cannot say which call it belongs to: with
// calls of two clients in flight, neither client is asked (one's user
// must not see the other's form); the host answers.
func TestTwoClientsInFlightAreNotAsked(t *testing.T) {
	m, _ := procManager(t)
	m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"name": "from host"})})
	require.NoError(t, m.Add("a", asker(t, nil)))
	waitState(t, m, "a", manager.StateConnected)
	other := &answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"name": "from the other client"})}
	slow := make(chan error, 1)
	go func() {
		_, err := m.Call(context.Background(), "a.slow", map[string]any{"ms": 2000}, manager.CallOptions{Client: "c2", Answerer: other, Timeout: patience})
		slow <- err
	}()
	require.Eventually(t, func() bool {
		mt, err := m.Metrics("a")
		return err == nil && mt.InFlight == 1
	}, patience, 5*time.Millisecond)
	mine := &answerer{offers: ask.Elicitation, elicit: accept(map[string]any{"name": "from the caller"})}
	r := askVia(t, m, manager.CallOptions{Client: "c1", Answerer: mine}, "elicitation/create", form)
	require.Equal(t, map[string]any{"name": "from host"}, r.Result["content"])
	require.NoError(t, <-slow)
}

// A form whose schema refers to itself is asked of nobody: a client's
// validator would follow the loop until the process died. The server gets
// an error saying why.
func TestLoopingFormIsAskedOfNobody(t *testing.T) {
	m, _ := procManager(t)
	var asked bool
	m.SetAnswerer(&answerer{offers: ask.Elicitation, elicit: func(context.Context, ask.From, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		asked = true
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	require.NoError(t, m.Add("a", asker(t, nil)))
	r := askVia(t, m, manager.CallOptions{}, "elicitation/create", map[string]any{
		"message": "?", "requestedSchema": map[string]any{"type": "object", "allOf": []any{map[string]any{"$ref": "#"}}}})
	require.NotNil(t, r.Error)
	require.Contains(t, r.Error.Message, "the requested form cannot be used")
	require.Contains(t, r.Error.Message, "reference loop")
	require.False(t, asked, "the form reached an answerer")
}
