package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// fakeSource is a Source whose servers and tools a test sets by hand; each
// change publishes the event a manager would. Calls answer
// "server.tool" as text, unless onCall says otherwise.
type fakeSource struct {
	bus   *events.Bus
	notes *notify.Hub    // what servers say
	late  sync.WaitGroup // progress delivered after a call returned

	mu sync.Mutex
	// mu guards the following.
	specs     map[string]manager.Spec
	tools     map[string][]string // server → tool names
	lastTrace trace.SpanContext   // the trace context the last call came with
	// onCall, if set, answers calls (as the manager would, asking
	// opts.Answerer what the server asks).
	onCall   func(ctx context.Context, name string, opts manager.CallOptions) (*mcp.CallToolResult, error)
	callers  []string // the Client of each call, in order
	answers  ask.Kind // what CallersAnswer declared
	released []string // ReleaseClient's clients, in order
	subs     []string // "+server uri" per Subscribe, "-server uri" per Unsubscribe
}

func newFakeSource(t testing.TB) *fakeSource {
	bus := events.NewBus(events.Options{})
	f := &fakeSource{bus: bus, notes: notify.NewHub(), specs: map[string]manager.Spec{}, tools: map[string][]string{}}
	t.Cleanup(func() { f.late.Wait(); bus.Close(); f.notes.Close() })
	return f
}

func (f *fakeSource) set(server string, spec manager.Spec, tools ...string) {
	f.mu.Lock()
	f.specs[server], f.tools[server] = spec, tools
	f.mu.Unlock()
	f.bus.Publish(events.KindToolsChanged, server, nil)
}

func (f *fakeSource) remove(server string) {
	f.mu.Lock()
	delete(f.specs, server)
	delete(f.tools, server)
	f.mu.Unlock()
	f.bus.Publish(events.KindRemoved, server, nil)
}

func (f *fakeSource) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for s := range f.specs {
		out = append(out, s)
	}
	return out
}

func (f *fakeSource) Status(name string) (manager.Status, error) {
	return manager.Status{Name: name, State: manager.StateConnected}, nil
}

func (f *fakeSource) Spec(name string) (manager.Spec, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.specs[name]
	if !ok {
		return s, fmt.Errorf("no server %q", name)
	}
	return s, nil
}

func (f *fakeSource) Tools(server string) ([]manager.ToolInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []manager.ToolInfo
	for s, names := range f.tools {
		if server != "" && s != server {
			continue
		}
		for _, n := range names {
			out = append(out, manager.ToolInfo{FullName: s + "." + n, Server: s, Name: n,
				InputSchema: map[string]any{"type": "object"}, Available: true})
		}
	}
	return out, nil
}

func (f *fakeSource) Resources(string) ([]manager.ResourceInfo, error) { return nil, nil }
func (f *fakeSource) Prompts(string) ([]manager.PromptInfo, error)     { return nil, nil }

// Call answers "server.tool". With a progress callback it reports one
// progress before answering and one a few milliseconds after, as the
// go-sdk client does with a notification the server sent just before its
// answer.
func (f *fakeSource) Call(ctx context.Context, name string, _ any, opts manager.CallOptions) (*mcp.CallToolResult, error) {
	f.mu.Lock()
	f.lastTrace = trace.SpanContextFromContext(ctx)
	f.callers = append(f.callers, opts.Client)
	onCall := f.onCall
	f.mu.Unlock()
	if onCall != nil {
		return onCall(ctx, name, opts)
	}
	if opts.Progress != nil {
		opts.Progress(manager.Progress{Progress: 1, Total: 2})
		f.late.Add(1)
		go func() {
			defer f.late.Done()
			time.Sleep(3 * time.Millisecond)
			opts.Progress(manager.Progress{Progress: 2, Total: 2})
		}()
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
}

func (f *fakeSource) ReadResource(context.Context, string, string, time.Duration) (*mcp.ReadResourceResult, error) {
	return nil, fmt.Errorf("no resources")
}

func (f *fakeSource) GetPrompt(context.Context, string, map[string]string, time.Duration) (*mcp.GetPromptResult, error) {
	return nil, fmt.Errorf("no prompts")
}

func (f *fakeSource) Complete(context.Context, string, string, *mcp.CompleteParams, time.Duration) (*mcp.CompleteResult, error) {
	return nil, fmt.Errorf("no completions")
}

func (f *fakeSource) Bus() *events.Bus { return f.bus }

func (f *fakeSource) Notices() *notify.Hub { return f.notes }

func (f *fakeSource) Subscribe(server, uri string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, "+"+server+" "+uri)
	return nil
}

func (f *fakeSource) Unsubscribe(server, uri string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, "-"+server+" "+uri)
	return nil
}

func (f *fakeSource) CallersAnswer(kinds ask.Kind) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers |= kinds
}

func (f *fakeSource) ReleaseClient(client string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.released = append(f.released, client)
}

// answerWith makes calls answer with h.
func (f *fakeSource) answerWith(h func(ctx context.Context, name string, opts manager.CallOptions) (*mcp.CallToolResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.onCall = h
}

// seen returns the Client of every call so far and the clients released.
func (f *fakeSource) seen() (callers, released []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.callers), slices.Clone(f.released)
}

// client connects an in-memory go-sdk client to one of g's endpoints; it
// counts the tools/list_changed notifications it receives.
type client struct {
	*mcp.ClientSession
	changed  chan struct{} // a wake-up per notification
	announce atomic.Int64  // notifications received
	progress chan *mcp.ProgressNotificationParams
	logs     chan *mcp.LoggingMessageParams
	updates  chan string        // the URI of each resources/updated
	server   *mcp.ServerSession // the gateway's end of the session
}

func connect(t *testing.T, g *Gateway, sel selection, name string) *client {
	t.Helper()
	return connectAs(t, g, sel, name, "test-client")
}

// connectAs is connect for a client that gives its name as clientName.
func connectAs(t *testing.T, g *Gateway, sel selection, name, clientName string) *client {
	t.Helper()
	ep, err := g.endpoint(sel, name)
	require.NoError(t, err)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := ep.srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	c := &client{changed: make(chan struct{}, 100), logs: make(chan *mcp.LoggingMessageParams, 100),
		updates: make(chan string, 100), progress: make(chan *mcp.ProgressNotificationParams, 100), server: ss}
	cl := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { c.logs <- r.Params },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			c.updates <- r.Params.URI
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.progress <- r.Params
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.announce.Add(1)
			select {
			case c.changed <- struct{}{}:
			default:
			}
		},
	})
	c.ClientSession, err = cl.Connect(context.Background(), ct, &mcp.ClientSessionOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(); _ = ss.Wait() })
	return c
}

// names lists the client's tools, sorted.
func (c *client) names(t *testing.T) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

// eventually polls the client's tool names until they are want.
func (c *client) eventually(t *testing.T, want ...string) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := c.names(t)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			require.Equal(t, want, got)
		}
		select {
		case <-c.changed:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// announced waits until the client has received n list_changed
// notifications in all.
func (c *client) announced(t *testing.T, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return c.announce.Load() >= n }, 5*time.Second, 5*time.Millisecond,
		"%d tools/list_changed notifications, want %d", c.announce.Load(), n)
}

func newGateway(t *testing.T, src Source) *Gateway {
	g := New(Options{Source: src})
	t.Cleanup(g.Close)
	return g
}
