package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// ---- fixtures: in-memory servers a test can change while they run ----

// fakeServer is a real go-sdk server whose tools, resources and prompts a
// test adds and removes while it runs (the SDK then sends list_changed). It
// counts the requests it receives by method, and can be told to leave a
// method unanswered until the request is cancelled.
type fakeServer struct {
	*mcp.Server

	mu sync.Mutex
	// mu guards the following.
	received map[string]int   // requests by method
	hang     map[string]bool  // methods that never answer
	fail     map[string]error // methods answered with this error
	args     []string         // raw arguments of each tools/call that reached a tool
}

func newFakeServer(opts *mcp.ServerOptions) *fakeServer {
	f := &fakeServer{
		Server:   mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1.0.0"}, opts),
		received: make(map[string]int),
		hang:     make(map[string]bool),
		fail:     make(map[string]error),
	}
	f.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			f.mu.Lock()
			f.received[method]++
			hang, fail := f.hang[method], f.fail[method]
			f.mu.Unlock()
			if hang {
				<-ctx.Done() // cancelled by the client's notifications/cancelled or the session's end
				return nil, context.Cause(ctx)
			}
			if fail != nil {
				return nil, fail
			}
			return next(ctx, method, req)
		}
	})
	return f
}

// count returns how many requests of method the server received.
func (f *fakeServer) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.received[method]
}

// setHang makes method go unanswered (until cancelled) or answered again.
func (f *fakeServer) setHang(method string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hang[method] = on
}

// calls returns the raw arguments of every tools/call a tool handled.
func (f *fakeServer) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.args)
}

// textSchema is the input of the tools addEcho adds.
var textSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"text": map[string]any{"type": "string"}},
	"required":   []any{"text"},
}

// addEcho adds tools that answer "<tool>:<text>".
func (f *fakeServer) addEcho(names ...string) {
	for _, name := range names {
		f.addTool(&mcp.Tool{Name: name, Description: "echo " + name, InputSchema: textSchema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var in struct{ Text string }
				_ = json.Unmarshal(req.Params.Arguments, &in)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + ":" + in.Text}}}, nil
			})
	}
}

// addTool adds a tool whose handler records the raw arguments it got.
func (f *fakeServer) addTool(t *mcp.Tool, h mcp.ToolHandler) {
	f.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		f.mu.Lock()
		f.args = append(f.args, string(req.Params.Arguments))
		f.mu.Unlock()
		return h(ctx, req)
	})
}

func (f *fakeServer) addPrompts(names ...string) {
	for _, name := range names {
		f.AddPrompt(&mcp.Prompt{Name: name, Description: "prompt " + name},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name}}}}, nil
			})
	}
}

func (f *fakeServer) addResources(uris ...string) {
	for _, uri := range uris {
		f.AddResource(&mcp.Resource{URI: uri, Name: uri, MIMEType: "text/plain"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "content of " + uri}}}, nil
			})
	}
}

// serve returns peers that connect every attempt to f (one live server,
// a new session each time).
func (f *fakeServer) serve() *peers {
	return &peers{newServer: func() *mcp.Server { return f.Server }}
}

// fleet is an Options.Dial that routes each server name to its peers; a
// name without peers is refused.
type fleet map[string]*peers

func (fl fleet) dial(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
	p := fl[name]
	if p == nil {
		return nil, errors.New("connection refused")
	}
	return p.dial(ctx, name, spec)
}

// quiet returns the events that arrive within d (fake time in a bubble).
func (tl *timeline) quiet(d time.Duration) []ev {
	tl.t.Helper()
	var got []ev
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		e, err := tl.sub.Recv(ctx)
		if err != nil {
			return got
		}
		got = append(got, ev{At: e.Time.Sub(tl.start), Kind: e.Kind, Server: e.Server, Fields: e.Fields})
	}
}

// noticeMethods lists the methods of notices, for comparing sequences.
func noticeMethods(notes []ev) []string {
	var out []string
	for _, n := range notes {
		out = append(out, n.Fields["method"].(string))
	}
	return out
}

func waitConnected(t testing.TB, m *manager.Manager, names ...string) {
	t.Helper()
	for _, name := range names {
		_, err := m.Wait(context.Background(), name, manager.StateConnected)
		require.NoError(t, err)
	}
}

func fullNames(tools []manager.ToolInfo) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.FullName)
	}
	return out
}

func mustTools(t testing.TB, m *manager.Manager, server string) []manager.ToolInfo {
	t.Helper()
	tools, err := m.Tools(server)
	require.NoError(t, err)
	return tools
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%02d", prefix, i)
	}
	return out
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// ---- what is listed on connect ----

// Every page of every list is read: with a page size of 3, ten tools take
// four tools/list requests, and nothing is missing.
func TestDiscoveryListsAllPagesOnConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(&mcp.ServerOptions{PageSize: 3})
		tools := numbered("tool", 10)
		f.addEcho(tools...)
		f.addResources(prefixed("fake://doc/", numbered("", 7))...)
		for _, n := range numbered("page", 4) {
			f.AddResourceTemplate(&mcp.ResourceTemplate{Name: n, URITemplate: "fake://" + n + "/{id}"},
				func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
		}
		f.addPrompts(numbered("prompt", 5)...)

		m := newManager(t, manager.Options{Dial: fleet{"big": f.serve()}.dial})
		tl := watch(t, m)
		start := time.Now()
		require.NoError(t, m.Add("big", fakeSpec(t, nil)))
		evs := tl.until("big", events.KindConnected, time.Second)
		require.EqualValues(t, 10, evs[len(evs)-1].Fields["tools"])

		require.Equal(t, prefixed("big.", tools), fullNames(mustTools(t, m, "big")))
		res, err := m.Resources("big")
		require.NoError(t, err)
		require.Len(t, res, 11)
		var templates int
		for _, r := range res {
			require.Equal(t, "big", r.Server)
			require.True(t, r.Available)
			if r.Template {
				templates++
			}
		}
		require.Equal(t, 4, templates)
		prompts, err := m.Prompts("big")
		require.NoError(t, err)
		require.Len(t, prompts, 5)
		require.Equal(t, "big.prompt00", prompts[0].FullName)

		st := mustStatus(t, m, "big")
		require.Equal(t, 10, st.Tools)
		require.Equal(t, 11, st.Resources)
		require.Equal(t, 5, st.Prompts)
		require.Equal(t, start, st.DiscoveredAt)

		for method, want := range map[string]int{
			"tools/list": 4, "resources/list": 3, "resources/templates/list": 2, "prompts/list": 2,
		} {
			require.Equal(t, want, f.count(method), "%s requests (page size 3)", method)
		}
	})
}

// Only what the server advertises is listed: a tools-only server gets no
// resources/list or prompts/list, and a server without tools no tools/list.
func TestDiscoveryFollowsCapabilities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		toolsOnly := newFakeServer(nil)
		toolsOnly.addEcho("echo")
		promptsOnly := newFakeServer(nil)
		promptsOnly.addPrompts("hello")
		m := newManager(t, manager.Options{Dial: fleet{"tools": toolsOnly.serve(), "prompts": promptsOnly.serve()}.dial})
		require.NoError(t, m.Add("tools", fakeSpec(t, nil)))
		require.NoError(t, m.Add("prompts", fakeSpec(t, nil)))
		waitConnected(t, m, "tools", "prompts")

		require.Equal(t, 1, toolsOnly.count("tools/list"))
		for _, method := range []string{"resources/list", "resources/templates/list", "prompts/list"} {
			require.Zero(t, toolsOnly.count(method), method)
		}
		require.Equal(t, 1, promptsOnly.count("prompts/list"))
		for _, method := range []string{"tools/list", "resources/list"} {
			require.Zero(t, promptsOnly.count(method), method)
		}
		require.Equal(t, []string{"tools.echo"}, fullNames(mustTools(t, m, "")))
		prompts, err := m.Prompts("")
		require.NoError(t, err)
		require.Len(t, prompts, 1)
		require.Equal(t, "prompts.hello", prompts[0].FullName)
	})
}

// An optional list the server does not implement (-32601) is no failure;
// a list that fails otherwise fails the attempt, naming the list.
func TestDiscoveryListErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		noTemplates, broken := newFakeServer(nil), newFakeServer(nil)
		for _, f := range []*fakeServer{noTemplates, broken} {
			f.addEcho("echo")
			f.addResources("fake://doc")
			f.addPrompts("hello")
		}
		noTemplates.fail["resources/templates/list"] = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
		broken.fail["prompts/list"] = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "prompt store offline"}
		m := newManager(t, manager.Options{Dial: fleet{"ok": noTemplates.serve(), "broken": broken.serve()}.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("ok", fakeSpec(t, nil)))
		require.NoError(t, m.Add("broken", fakeSpec(t, nil)))

		waitConnected(t, m, "ok")
		res, err := m.Resources("ok")
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.Equal(t, "fake://doc", res[0].URI)
		require.Equal(t, 1, noTemplates.count("resources/templates/list"))

		evs := tl.until("broken", events.KindBackoff, time.Second)
		require.Equal(t, `server "broken": prompts/list: calling "prompts/list": prompt store offline`, evs[len(evs)-1].Fields["error"])
		require.Empty(t, mustTools(t, m, "broken"), "a failed discovery publishes nothing")
	})
}

// ---- idempotent, cached, forced, refreshed ----

// Discovering twice gives identical results from the cache (no request);
// force asks the server again, returns the same set, moves discovered_at,
// and announces no change.
func TestDiscoverIsCachedAndIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("alpha", "beta")
		m := newManager(t, manager.Options{Dial: fleet{"x": f.serve()}.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)
		connectedAt := time.Now()
		require.Equal(t, 1, f.count("tools/list"))

		first, errs, err := m.Discover(context.Background(), "x", false)
		require.NoError(t, err)
		require.Nil(t, errs)
		require.Equal(t, []string{"x.alpha", "x.beta"}, fullNames(first))
		second, errs, err := m.Discover(context.Background(), "", false)
		require.NoError(t, err)
		require.Nil(t, errs)
		require.Equal(t, first, second, "discovering twice gives identical results")
		require.Equal(t, 1, f.count("tools/list"), "without force the cache answers")
		require.Equal(t, connectedAt, mustStatus(t, m, "x").DiscoveredAt)

		time.Sleep(time.Minute)
		forced, errs, err := m.Discover(context.Background(), "x", true)
		require.NoError(t, err)
		require.Nil(t, errs)
		require.Equal(t, first, forced, "force returns the same set for an unchanged server")
		require.Equal(t, 2, f.count("tools/list"), "force asks the server")
		st := mustStatus(t, m, "x")
		require.Equal(t, connectedAt.Add(time.Minute), st.DiscoveredAt, "discovered_at records the refresh")
		require.Equal(t, manager.StateConnected, st.State)
		require.Equal(t, 2, st.Tools)
		require.Empty(t, tl.quiet(time.Second), "an unchanged server announces no change")
	})
}

// A server restarted with other tools is discovered afresh on reconnect,
// and what changed is published.
func TestDiscoveryAfterRestartSeesNewTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		before, after := newFakeServer(nil), newFakeServer(nil)
		before.addEcho("alpha", "beta")
		before.addPrompts("greet")
		after.addEcho("alpha", "gamma", "delta")
		after.addPrompts("greet")
		var dials atomic.Int32
		p := &peers{newServer: func() *mcp.Server {
			if dials.Add(1) == 1 {
				return before.Server
			}
			return after.Server
		}}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)
		require.Equal(t, []string{"x.alpha", "x.beta"}, fullNames(mustTools(t, m, "x")))

		time.Sleep(10 * time.Second)
		p.drop(t) // the server "restarts": the next dial reaches the new one
		dropped := time.Now()
		evs := tl.until("x", events.KindToolsChanged, time.Second)
		require.Equal(t, []events.Kind{events.KindDisconnected, events.KindBackoff, events.KindConnecting,
			events.KindConnected, events.KindToolsChanged}, kinds(evs))
		changed := evs[len(evs)-1]
		require.Equal(t, []string{"delta", "gamma"}, changed.Fields["added"])
		require.Equal(t, []string{"beta"}, changed.Fields["removed"])
		require.Equal(t, evs[3].At, changed.At, "published with the reconnect")

		tools, errs, err := m.Discover(context.Background(), "x", false)
		require.NoError(t, err)
		require.Nil(t, errs)
		require.Equal(t, []string{"x.alpha", "x.delta", "x.gamma"}, fullNames(tools))
		st := mustStatus(t, m, "x")
		require.Equal(t, 3, st.Tools)
		require.Equal(t, dropped.Add(100*ms), st.DiscoveredAt, "refreshed by the reconnect")
		require.Equal(t, 1, after.count("tools/list"))
		require.Empty(t, only(tl.quiet(time.Second), events.KindPromptsChanged), "the prompts did not change")
	})
}

// ---- servers are independent ----

// A fails, B succeeds: B's tools are listed and usable while A cannot
// connect, and a forced discovery reports A's failure by name next to B's
// tools.
func TestDiscoverFailedServerDoesNotBlockOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newFakeServer(nil)
		b.addEcho("search")
		m := newManager(t, manager.Options{Dial: fleet{"b": b.serve()}.dial, Rand: constRand(0)})
		tl := watch(t, m)
		start := time.Now()
		require.NoError(t, m.Add("a", fakeSpec(t, map[string]any{"timeouts": map[string]any{"request": "1s"}})))
		require.NoError(t, m.Add("b", fakeSpec(t, nil)))
		waitConnected(t, m, "b")
		require.Equal(t, start, time.Now(), "b connects at once")
		tl.until("a", events.KindBackoff, time.Second)

		tools := mustTools(t, m, "")
		require.Equal(t, []string{"b.search"}, fullNames(tools))
		require.True(t, tools[0].Available)
		res, err := m.Call(context.Background(), "search", map[string]any{"text": "q"}, manager.CallOptions{})
		require.NoError(t, err, "the bare name resolves to b's tool")
		require.Equal(t, "search:q", text(t, res))

		tools, errs, err := m.Discover(context.Background(), "", true)
		require.NoError(t, err)
		require.Equal(t, time.Second, time.Since(start), "bounded by a's own request timeout")
		require.Equal(t, []string{"b.search"}, fullNames(tools))
		require.Len(t, errs, 1)
		requireCode(t, errs["a"], manager.ErrConnectionFailed, "a", "discover")
		require.Contains(t, errs["a"].Error(), "connection refused", "the error says why a is down")
		require.Equal(t, start, mustStatus(t, m, "b").DiscoveredAt, "b was refreshed at once, not after a's timeout")
	})
}

// All servers fail: an empty tool set, and an error for each server naming
// it.
func TestDiscoverAllServersFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: fleet{}.dial, Rand: constRand(0)})
		spec := fakeSpec(t, map[string]any{"timeouts": map[string]any{"request": "1s"}})
		for _, name := range []string{"a", "b", "c"} {
			require.NoError(t, m.Add(name, spec))
		}
		tools, errs, err := m.Discover(context.Background(), "", true)
		require.NoError(t, err)
		require.Empty(t, tools)
		require.Len(t, errs, 3)
		for _, name := range []string{"a", "b", "c"} {
			me := requireCode(t, errs[name], manager.ErrConnectionFailed, name, "discover")
			require.ErrorIs(t, me, manager.ErrTimeout)
			require.Contains(t, me.Error(), "connection refused")
		}
		tools, err = m.Tools("")
		require.NoError(t, err)
		require.Empty(t, tools)
	})
}

// A slow server: one whose tools/list never answers delays nobody else, on
// connect (its connect timeout) and on a forced discovery (its request
// timeout).
func TestDiscoverSlowServerDoesNotBlockOthers(t *testing.T) {
	t.Run("on connect", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			slow, fast := newFakeServer(nil), newFakeServer(nil)
			slow.addEcho("slowtool")
			slow.setHang("tools/list", true)
			fast.addEcho("fasttool")
			m := newManager(t, manager.Options{Dial: fleet{"slow": slow.serve(), "fast": fast.serve()}.dial, Rand: constRand(0)})
			tl := watch(t, m)
			start := time.Now()
			require.NoError(t, m.Add("slow", fakeSpec(t, map[string]any{"timeouts": map[string]any{"connect": "5s"}})))
			require.NoError(t, m.Add("fast", fakeSpec(t, nil)))
			waitConnected(t, m, "fast")
			require.Equal(t, start, time.Now(), "fast is not held up by slow's discovery")
			require.Equal(t, []string{"fast.fasttool"}, fullNames(mustTools(t, m, "")))
			require.Equal(t, manager.StateConnecting, mustStatus(t, m, "slow").State)

			evs := tl.until("slow", events.KindBackoff, time.Minute)
			backoff := evs[len(evs)-1]
			require.Equal(t, 5*time.Second, backoff.At)
			require.Equal(t, `server "slow": tools/list: timeout after 5s`, backoff.Fields["error"])
		})
	})
	t.Run("forced", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			slow, fast := newFakeServer(nil), newFakeServer(nil)
			slow.addEcho("slowtool")
			fast.addEcho("fasttool")
			m := newManager(t, manager.Options{Dial: fleet{"slow": slow.serve(), "fast": fast.serve()}.dial})
			require.NoError(t, m.Add("slow", fakeSpec(t, map[string]any{"timeouts": map[string]any{"request": "2s"}})))
			require.NoError(t, m.Add("fast", fakeSpec(t, nil)))
			waitConnected(t, m, "slow", "fast")
			slow.setHang("tools/list", true)

			start := time.Now()
			tools, errs, err := m.Discover(context.Background(), "", true)
			require.NoError(t, err)
			require.Equal(t, 2*time.Second, time.Since(start))
			require.Equal(t, []string{"fast.fasttool", "slow.slowtool"}, fullNames(tools), "slow's last known tools stay listed")
			for _, tool := range tools {
				require.True(t, tool.Available, "%s: a slow list is no reason to drop the session", tool.FullName)
			}
			require.Len(t, errs, 1)
			var me *manager.Error
			require.ErrorAs(t, errs["slow"], &me)
			require.Equal(t, manager.CodeInvocationFailed, me.Code)
			require.Equal(t, "slow", me.Server)
			require.Contains(t, []string{"discover", "tools/list"}, me.Op)
			require.ErrorIs(t, me, manager.ErrTimeout)
			require.Contains(t, me.Error(), "timeout after 2s")
			require.Equal(t, start, mustStatus(t, m, "fast").DiscoveredAt, "fast was refreshed at once")
			require.Equal(t, 2, fast.count("tools/list"))
			require.Equal(t, manager.StateConnected, mustStatus(t, m, "slow").State)

			slow.setHang("tools/list", false)
			_, errs, err = m.Discover(context.Background(), "slow", true)
			require.NoError(t, err)
			require.Nil(t, errs, "the session still serves")
			require.Equal(t, 2, fast.count("tools/list"), "a named discovery refreshes only that server")
		})
	})
}

func TestDiscoverUnknownServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t)
		tools, errs, err := m.Discover(context.Background(), "dmeo", true)
		require.Nil(t, tools)
		require.Nil(t, errs)
		me := requireCode(t, err, manager.ErrServerNotFound, "dmeo", "discover")
		require.Contains(t, me.Error(), `did you mean "demo"?`)
	})
}

// ---- list_changed ----

// A list_changed notification re-lists that kind only and publishes what
// was added and removed, for tools, prompts and resources alike.
func TestListChangedPublishesChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("alpha", "beta")
		f.addPrompts("p1")
		f.addResources("fake://r1")
		m := newManager(t, manager.Options{Dial: fleet{"x": f.serve()}.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)
		lists := func() [3]int {
			return [3]int{f.count("tools/list"), f.count("prompts/list"), f.count("resources/list")}
		}
		require.Equal(t, [3]int{1, 1, 1}, lists())

		// The SDK debounces changes for 10ms, then notifies once.
		changedAt := time.Now()
		f.addEcho("gamma")
		f.RemoveTools("beta")
		evs := tl.until("x", events.KindToolsChanged, time.Second)
		require.Equal(t, []events.Kind{events.KindToolsChanged}, kinds(evs), "the notification is a notice, not an event")
		require.Equal(t, []string{"notifications/tools/list_changed"}, noticeMethods(tl.heard(0)))
		require.Equal(t, []string{"gamma"}, evs[0].Fields["added"])
		require.Equal(t, []string{"beta"}, evs[0].Fields["removed"])
		require.Equal(t, []string{"x.alpha", "x.gamma"}, fullNames(mustTools(t, m, "x")))
		st := mustStatus(t, m, "x")
		require.Equal(t, 2, st.Tools)
		require.Equal(t, changedAt.Add(10*ms), st.DiscoveredAt)
		require.Equal(t, [3]int{2, 1, 1}, lists(), "only tools were re-listed")

		f.addEcho("delta")
		evs = tl.until("x", events.KindToolsChanged, time.Second)
		require.Equal(t, []string{"delta"}, evs[len(evs)-1].Fields["added"])
		require.Equal(t, []string{}, evs[len(evs)-1].Fields["removed"], "an empty list, not nil")
		f.RemoveTools("delta")
		evs = tl.until("x", events.KindToolsChanged, time.Second)
		require.Equal(t, []string{}, evs[len(evs)-1].Fields["added"])
		require.Equal(t, []string{"delta"}, evs[len(evs)-1].Fields["removed"])
		require.Equal(t, []string{"notifications/tools/list_changed", "notifications/tools/list_changed"}, noticeMethods(tl.heard(0)))
		require.Equal(t, [3]int{4, 1, 1}, lists())

		f.addPrompts("p2", "p3")
		f.RemovePrompts("p1")
		evs = tl.until("x", events.KindPromptsChanged, time.Second)
		require.Equal(t, []events.Kind{events.KindPromptsChanged}, kinds(evs), "the notification is a notice, not an event")
		require.Equal(t, []string{"notifications/prompts/list_changed"}, noticeMethods(tl.heard(0)))
		require.Equal(t, []string{"p2", "p3"}, evs[0].Fields["added"])
		require.Equal(t, []string{"p1"}, evs[0].Fields["removed"])
		require.Equal(t, 2, mustStatus(t, m, "x").Prompts)
		require.Equal(t, [3]int{4, 2, 1}, lists(), "only prompts were re-listed")

		f.addResources("fake://r2")
		f.RemoveResources("fake://r1")
		evs = tl.until("x", events.KindResourcesChanged, time.Second)
		require.Equal(t, []events.Kind{events.KindResourcesChanged}, kinds(evs), "the notification is a notice, not an event")
		require.Equal(t, []string{"notifications/resources/list_changed"}, noticeMethods(tl.heard(0)))
		require.Equal(t, []string{"fake://r2"}, evs[0].Fields["added"])
		require.Equal(t, []string{"fake://r1"}, evs[0].Fields["removed"])
		res, err := m.Resources("x")
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.Equal(t, "fake://r2", res[0].URI)
		require.Equal(t, [3]int{4, 2, 2}, lists(), "only resources were re-listed")

		// A change that keeps the names (a tool replaced by a new version)
		// is re-listed, but there is nothing to announce.
		f.addTool(&mcp.Tool{Name: "alpha", Description: "alpha, version 2", InputSchema: textSchema},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		require.Empty(t, tl.quiet(time.Second))
		require.Equal(t, []string{"notifications/tools/list_changed"}, noticeMethods(tl.heard(0)))
		require.Equal(t, "alpha, version 2", mustTools(t, m, "x")[0].Description)
		require.Equal(t, 5, f.count("tools/list"))
	})
}
