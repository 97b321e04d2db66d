package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// ---- names ----

// Two servers both offer "search"; both are listed under their full names,
// the bare name is ambiguous and says which full names to use, and each
// full name reaches its own server.
func TestSameToolOnTwoServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newFakeServer(nil), newFakeServer(nil)
		a.addEcho("search", "index")
		b.addEcho("search")
		m := newManager(t, manager.Options{Dial: fleet{"server-a": a.serve(), "server-b": b.serve()}.dial})
		require.NoError(t, m.Add("server-a", fakeSpec(t, nil)))
		require.NoError(t, m.Add("server-b", fakeSpec(t, nil)))
		waitConnected(t, m, "server-a", "server-b")

		require.Equal(t, []string{"server-a.index", "server-a.search", "server-b.search"}, fullNames(mustTools(t, m, "")))

		_, err := m.Call(context.Background(), "search", map[string]any{"text": "q"}, manager.CallOptions{})
		requireCode(t, err, manager.ErrAmbiguousTool, "", "call")
		require.EqualError(t, err, `call: tool "search" is offered by 2 servers; call one of: server-a.search, server-b.search`)

		for _, name := range []string{"server-a.search", "server-b.search", "SERVER-B.search"} {
			res, err := m.Call(context.Background(), name, map[string]any{"text": name}, manager.CallOptions{})
			require.NoError(t, err, name)
			require.Equal(t, "search:"+name, text(t, res))
		}
		require.Equal(t, []string{`{"text":"server-a.search"}`}, a.calls())
		require.Equal(t, []string{`{"text":"server-b.search"}`, `{"text":"SERVER-B.search"}`}, b.calls())

		res, err := m.Call(context.Background(), "index", map[string]any{"text": "bare"}, manager.CallOptions{})
		require.NoError(t, err, "a name only one server offers resolves bare")
		require.Equal(t, "index:bare", text(t, res))

		// When one of the two goes away, the bare name is no longer ambiguous.
		done, err := m.Remove("server-a")
		require.NoError(t, err)
		<-done
		res, err = m.Call(context.Background(), "search", map[string]any{"text": "now"}, manager.CallOptions{})
		require.NoError(t, err)
		require.Equal(t, "search:now", text(t, res))
		require.Len(t, b.calls(), 3)
	})
}

// An unknown name gets the close matches by full name.
func TestUnknownToolSuggestsFullNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newFakeServer(nil), newFakeServer(nil)
		a.addEcho("search", "searcher")
		b.addEcho("research")
		m := newManager(t, manager.Options{Dial: fleet{"a": a.serve(), "b": b.serve()}.dial})
		require.NoError(t, m.Add("a", fakeSpec(t, nil)))
		require.NoError(t, m.Add("b", fakeSpec(t, nil)))
		waitConnected(t, m, "a", "b")

		_, err := m.Call(context.Background(), "serch", nil, manager.CallOptions{})
		requireCode(t, err, manager.ErrToolNotFound, "", "call")
		require.EqualError(t, err, `call: no tool "serch"; did you mean "a.search"?`)

		_, err = m.Call(context.Background(), "earch", nil, manager.CallOptions{})
		requireCode(t, err, manager.ErrToolNotFound, "", "call")
		require.EqualError(t, err, `call: no tool "earch"; did you mean "a.search", "a.searcher" or "b.research"?`)

		_, err = m.Call(context.Background(), "c.search", nil, manager.CallOptions{})
		requireCode(t, err, manager.ErrToolNotFound, "", "call")
		require.EqualError(t, err, `call: no server "c" and no tool "c.search"; did you mean "a.search"?`)
		require.Empty(t, a.calls())
		require.Empty(t, b.calls())
	})
}

// ---- availability ----

// Tools, resources and prompts of a server that is not connected stay
// listed with Available false, in backoff and once failed; a reconnect
// makes them available again.
func TestUnavailableWhileNotConnected(t *testing.T) {
	requireAvailable := func(t *testing.T, m *manager.Manager, want bool) {
		t.Helper()
		tools := mustTools(t, m, "demo")
		require.Len(t, tools, 4)
		for _, tool := range tools {
			require.Equal(t, want, tool.Available, tool.FullName)
		}
		res, err := m.Resources("demo")
		require.NoError(t, err)
		require.Len(t, res, 1)
		require.Equal(t, want, res[0].Available, res[0].URI)
		prompts, err := m.Prompts("demo")
		require.NoError(t, err)
		require.Len(t, prompts, 1)
		require.Equal(t, want, prompts[0].Available, prompts[0].FullName)
	}
	t.Run("backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := &peers{}
			m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
			tl := watch(t, m)
			require.NoError(t, m.Add("demo", fakeSpec(t, map[string]any{"backoff": map[string]any{"initial": "1s", "max": "1s"}})))
			tl.until("demo", events.KindConnected, time.Second)
			requireAvailable(t, m, true)

			p.drop(t)
			tl.until("demo", events.KindBackoff, time.Second)
			requireAvailable(t, m, false)

			tl.until("demo", events.KindConnected, 2*time.Second)
			requireAvailable(t, m, true)
		})
	})
	t.Run("failed", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := &peers{}
			m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
			tl := watch(t, m)
			require.NoError(t, m.Add("demo", fakeSpec(t, map[string]any{"max_retries": 0})))
			tl.until("demo", events.KindConnected, time.Second)
			p.drop(t)
			tl.until("demo", events.KindFailed, time.Second)
			require.Equal(t, manager.StateFailed, mustStatus(t, m, "demo").State)
			requireAvailable(t, m, false)

			// Still resolvable by name, and the call says why it cannot run.
			_, err := m.Call(context.Background(), "echo", map[string]any{"text": "x"}, manager.CallOptions{})
			me := requireCode(t, err, manager.ErrConnectionFailed, "demo", `tools/call "echo"`)
			require.Contains(t, me.Error(), "server is failed")
			require.Equal(t, 1, p.dialCount())
		})
	})
}

// A removed server's tools, resources and prompts disappear with it, and
// the removal is an event.
func TestRemovedServerDisappearsFromRegistry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t)
		tl := watch(t, m)
		require.Len(t, mustTools(t, m, ""), 6)

		done, err := m.Remove("demo")
		require.NoError(t, err)
		require.Equal(t, []string{"other.echo", "other.reverse"}, fullNames(mustTools(t, m, "")),
			"gone as soon as Remove returns")
		<-done
		evs := tl.until("demo", events.KindRemoved, time.Second)
		require.Equal(t, events.KindRemoved, evs[len(evs)-1].Kind)

		res, err := m.Resources("")
		require.NoError(t, err)
		require.Empty(t, res)
		prompts, err := m.Prompts("")
		require.NoError(t, err)
		require.Empty(t, prompts)
		_, err = m.Tools("demo")
		requireCode(t, err, manager.ErrServerNotFound, "demo", "tools")

		_, err = m.Call(context.Background(), "demo.add", map[string]any{"a": 1, "b": 2}, manager.CallOptions{})
		requireCode(t, err, manager.ErrToolNotFound, "", "call")
		res2, err := m.Call(context.Background(), "echo", map[string]any{"text": "x"}, manager.CallOptions{})
		require.NoError(t, err, "echo is no longer ambiguous")
		require.Equal(t, "other:x", text(t, res2))
	})
}

// ---- arguments are validated before any RPC ----

// searchTool is a tool whose schema exercises each validation rule. The
// handler records the raw arguments it receives.
const searchToolSchema = `{
	"type": "object",
	"properties": {
		"query":   {"type": "string"},
		"limit":   {"type": "integer"},
		"tags":    {"type": "array", "items": {"type": "string"}},
		"options": {
			"type": "object",
			"properties": {"depth": {"type": "integer"}, "mode": {"type": "string", "enum": ["fast", "full"]}},
			"required": ["depth"]
		}
	},
	"required": ["query"],
	"additionalProperties": false
}`

// validationServer offers search (closed schema) and note (open schema).
func validationServer() *fakeServer {
	f := newFakeServer(nil)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	f.addTool(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(searchToolSchema)}, ok)
	f.addTool(&mcp.Tool{Name: "note", InputSchema: textSchema}, ok)
	return f
}

func TestCallValidatesArgumentsBeforeRPC(t *testing.T) {
	tests := []struct {
		name string
		tool string
		args any
		want string // the error message after `server "v": tools/call "<tool>": `
	}{
		{
			name: "missing required", tool: "search", args: map[string]any{"limit": 3},
			want: "invalid arguments: $.query: required property is missing",
		},
		{
			name: "wrong type", tool: "search", args: map[string]any{"query": true},
			want: "invalid arguments: $.query: must be string, got boolean true",
		},
		{
			name: "non-integral number for an integer", tool: "search", args: map[string]any{"query": "q", "limit": 2.5},
			want: "invalid arguments: $.limit: must be integer, got number 2.5",
		},
		{
			name: "nested property", tool: "search",
			args: map[string]any{"query": "q", "options": map[string]any{"depth": "deep", "mode": "fast"}},
			want: `invalid arguments: $.options.depth: must be integer, got string "deep"`,
		},
		{
			name: "nested required", tool: "search", args: map[string]any{"query": "q", "options": map[string]any{}},
			want: "invalid arguments: $.options.depth: required property is missing",
		},
		{
			name: "array item", tool: "search", args: map[string]any{"query": "q", "tags": []any{"a", 2}},
			want: "invalid arguments: $.tags[1]: must be string, got integer 2",
		},
		{
			name: "closed schema: did you mean", tool: "search", args: map[string]any{"query": "q", "limt": 3},
			want: `invalid arguments: $.limt: unexpected property; did you mean "limit"?`,
		},
		{
			name: "every violation at once", tool: "search", args: map[string]any{"limit": "3", "colour": "red"},
			want: `invalid arguments: $.query: required property is missing; ` +
				`$.colour: unexpected property (the tool accepts: limit, options, query, tags); ` +
				`$.limit: must be integer, got string "3"`,
		},
		{
			name: "open schema still checks what it declares", tool: "note", args: map[string]any{"extra": 1},
			want: "invalid arguments: $.text: required property is missing",
		},
		{
			name: "arguments that are not an object", tool: "note", args: []any{"x"},
			want: `arguments must be a JSON object, got array ["x"]`,
		},
		{
			name: "null where an integer is wanted", tool: "search", args: map[string]any{"query": "q", "limit": nil},
			want: "invalid arguments: $.limit: must be integer, got null",
		},
		{
			name: "an integer no server can read", tool: "search", args: map[string]any{"query": "q", "limit": 1e300},
			want: "invalid arguments: $.limit: must be integer, got number 1e+300 (beyond ±9007199254740991, the integers a JSON number holds exactly)",
		},
	}
	synctest.Test(t, func(t *testing.T) {
		f := validationServer()
		m := newManager(t, manager.Options{Dial: fleet{"v": f.serve()}.dial})
		require.NoError(t, m.Add("v", fakeSpec(t, nil)))
		waitConnected(t, m, "v")
		for _, tt := range tests {
			res, err := m.Call(context.Background(), "v."+tt.tool, tt.args, manager.CallOptions{})
			require.Nil(t, res, tt.name)
			requireCode(t, err, manager.ErrInvalidArguments, "v", fmt.Sprintf("tools/call %q", tt.tool))
			require.Equal(t, fmt.Sprintf("server \"v\": tools/call %q: %s", tt.tool, tt.want), err.Error(), tt.name)
		}
		require.Zero(t, f.count("tools/call"), "no invalid call may reach the server")
		require.Empty(t, f.calls())
	})
}

// What passes validation reaches the server as the schema wants it: extra
// arguments of an open schema kept, an empty table (Lua cannot tell {} from
// []) sent as [] where an array is wanted, integral numbers as integers.
func TestCallSendsArgumentsShapedBySchema(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := validationServer()
		m := newManager(t, manager.Options{Dial: fleet{"v": f.serve()}.dial})
		require.NoError(t, m.Add("v", fakeSpec(t, nil)))
		waitConnected(t, m, "v")
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"note", map[string]any{"text": "hi", "extra": map[string]any{"k": "v"}, "n": 1.5}},
			{"search", map[string]any{"query": "q", "tags": map[string]any{}}},
			{"search", map[string]any{"query": "q", "limit": 3.0, "options": map[string]any{"depth": float64(2)}}},
			{"search", map[string]any{"query": "q", "tags": []any{"a"}, "options": map[string]any{"depth": int64(1), "mode": "full"}}},
		} {
			res, err := m.Call(context.Background(), "v."+c.tool, c.args, manager.CallOptions{})
			require.NoError(t, err, "%s %v", c.tool, c.args)
			require.False(t, res.IsError, "%s %v: %v", c.tool, c.args, res.Content)
		}
		require.Equal(t, []string{
			`{"extra":{"k":"v"},"n":1.5,"text":"hi"}`,
			`{"query":"q","tags":[]}`,
			`{"limit":3,"options":{"depth":2},"query":"q"}`,
			`{"options":{"depth":1,"mode":"full"},"query":"q","tags":["a"]}`,
		}, f.calls())
	})
}

// Validation before any RPC, against a real process: fakemcp records every
// message it receives; invalid calls never show up there.
func TestProcessInvalidArgumentsNeverSent(t *testing.T) {
	m, _ := procManager(t)
	record := filepath.Join(t.TempDir(), "record.log")
	require.NoError(t, m.Add("fake", fake(t, "--record="+record)))
	waitState(t, m, "fake", manager.StateConnected)

	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "$.text: required property is missing"},
		{map[string]any{"text": 42}, "$.text: must be string, got integer 42"},
		{map[string]any{"txt": "hi"}, "$.text: required property is missing"},
	} {
		_, err := m.Call(context.Background(), "fake.echo", c.args, manager.CallOptions{Timeout: patience})
		me := requireCode(t, err, manager.ErrInvalidArguments, "fake", `tools/call "echo"`)
		require.Contains(t, me.Error(), c.want)
	}
	// Extra arguments pass (fakemcp's schema leaves them open).
	res, err := m.Call(context.Background(), "fake.echo", map[string]any{"text": "valid", "extra": true}, manager.CallOptions{Timeout: patience})
	require.NoError(t, err)
	require.Equal(t, "valid", text(t, res))

	b, err := os.ReadFile(record)
	require.NoError(t, err)
	var calls []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "tools/call ") {
			calls = append(calls, line)
		}
	}
	require.Len(t, calls, 1, "only the valid call reached the server; it received:\n%s", b)
	require.Contains(t, string(b), "tools/list", "discovery is recorded too")
}

// ---- server notifications ----

// progressServer offers count {n}: n progress notifications (when the call
// asked for them), then "counted n".
func progressServer() *fakeServer {
	f := newFakeServer(nil)
	f.addTool(&mcp.Tool{Name: "count", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ N int }
			if err := json.Unmarshal(req.Params.Arguments, &in); err != nil {
				return nil, err
			}
			if token := req.Params.GetProgressToken(); token != nil {
				for i := 1; i <= in.N; i++ {
					err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(in.N), Message: fmt.Sprintf("step %d", i),
					})
					if err != nil {
						return nil, err
					}
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("counted %d", in.N)}}}, nil
		})
	return f
}

// progressLog collects what CallOptions.Progress receives.
type progressLog struct {
	mu sync.Mutex
	// mu guards got.
	got []manager.Progress
}

func (l *progressLog) add(p manager.Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, p)
}

func (l *progressLog) all() []manager.Progress {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]manager.Progress(nil), l.got...)
}

func wantProgress(n int) []manager.Progress {
	var out []manager.Progress
	for i := 1; i <= n; i++ {
		out = append(out, manager.Progress{Progress: float64(i), Total: float64(n), Message: fmt.Sprintf("step %d", i)})
	}
	return out
}

// Progress notifications reach the call that asked for them, all of them,
// in order, and only that call; each is also a notice for observers.
func TestCallProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := progressServer()
		m := newManager(t, manager.Options{Dial: fleet{"p": f.serve()}.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("p", fakeSpec(t, nil)))
		tl.until("p", events.KindConnected, time.Second)

		var small, big progressLog
		var wg sync.WaitGroup
		wg.Go(func() {
			res, err := m.Call(context.Background(), "p.count", map[string]any{"n": 3}, manager.CallOptions{Progress: small.add})
			require.NoError(t, err)
			require.Equal(t, "counted 3", text(t, res))
		})
		wg.Go(func() {
			res, err := m.Call(context.Background(), "p.count", map[string]any{"n": 20}, manager.CallOptions{Progress: big.add})
			require.NoError(t, err)
			require.Equal(t, "counted 20", text(t, res))
		})
		wg.Wait()
		// Progress sent just before the answer may be handled just after it
		// (the SDK hands notifications to another goroutine than responses).
		synctest.Wait()
		require.Equal(t, wantProgress(3), small.all())
		require.Equal(t, wantProgress(20), big.all())

		// Without a Progress function the call asks for none.
		res, err := m.Call(context.Background(), "p.count", map[string]any{"n": 5}, manager.CallOptions{})
		require.NoError(t, err)
		require.Equal(t, "counted 5", text(t, res))

		notes := tl.heard(time.Second)
		require.Len(t, notes, 23)
		for _, n := range notes {
			require.Equal(t, "p", n.Server)
			require.Equal(t, "notifications/progress", n.Fields["method"])
		}
		var lastOfBig map[string]any
		for _, n := range notes {
			if p := n.Fields["params"].(map[string]any); p["total"] == 20.0 {
				lastOfBig = p
			}
		}
		require.Equal(t, map[string]any{"progress": 20.0, "total": 20.0, "message": "step 20"}, lastOfBig)
	})
}

// Repeated, so that a progress notification handled after its call's
// response (the SDK routes responses and notifications on different
// goroutines) is caught if it is dropped: before the fix about half the
// calls lost their last notification.
func TestCallProgressIsNeverLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := progressServer()
		m := newManager(t, manager.Options{Dial: fleet{"p": f.serve()}.dial})
		require.NoError(t, m.Add("p", fakeSpec(t, nil)))
		waitConnected(t, m, "p")
		for i := range 200 {
			var log progressLog
			_, err := m.Call(context.Background(), "p.count", map[string]any{"n": 2}, manager.CallOptions{Progress: log.add})
			require.NoError(t, err)
			synctest.Wait() // the notification goroutine has handled what it received
			require.Equal(t, wantProgress(2), log.all(), "call %d", i)
		}
	})
}

// injectNotification sends a notification from the server side of the
// newest session, the way a server that emits it unasked would.
func (p *peers) injectNotification(t testing.TB, method, params string) {
	t.Helper()
	p.mu.Lock()
	conn := p.conns[len(p.conns)-1]
	p.mu.Unlock()
	require.NoError(t, conn.Write(context.Background(), &jsonrpc.Request{Method: method, Params: json.RawMessage(params)}))
}

// Log messages and resource updates become notices with the method and
// params, and no event; a notification of any kind leaves the session
// working.
func TestServerNotificationsBecomeNotices(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		tl.until("demo", events.KindConnected, time.Second)

		p.injectNotification(t, "notifications/message", `{"level":"warning","logger":"db","data":{"msg":"slow query","ms":1200}}`)
		p.injectNotification(t, "notifications/resources/updated", `{"uri":"demo://readme"}`)
		p.injectNotification(t, "notifications/made_up", `{}`)
		require.Empty(t, tl.quiet(time.Second))
		evs := tl.heard(0)
		require.Equal(t, []events.Kind{events.KindNotification, events.KindNotification}, kinds(evs), "%v", evs)
		require.Equal(t, "notifications/message", evs[0].Fields["method"])
		require.Equal(t, map[string]any{"level": "warning", "logger": "db", "data": map[string]any{"msg": "slow query", "ms": 1200.0}},
			evs[0].Fields["params"])
		require.Equal(t, "notifications/resources/updated", evs[1].Fields["method"])
		require.Equal(t, map[string]any{"uri": "demo://readme"}, evs[1].Fields["params"])
		for _, e := range evs {
			require.Equal(t, "demo", e.Server)
		}

		res, err := m.Call(context.Background(), "demo.echo", map[string]any{"text": "still fine"}, manager.CallOptions{})
		require.NoError(t, err)
		require.Equal(t, "still fine", text(t, res))
		require.Equal(t, manager.StateConnected, mustStatus(t, m, "demo").State)
	})
}

// ---- resources and prompts ----

func TestReadResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t) // only demo lists demo://readme
		res, err := m.ReadResource(context.Background(), demo.ReadmeURI, "", 0)
		require.NoError(t, err, "the one server that lists the URI is asked")
		require.Len(t, res.Contents, 1)
		require.Equal(t, demo.Readme, res.Contents[0].Text)

		res, err = m.ReadResource(context.Background(), demo.ReadmeURI, "DEMO", 0)
		require.NoError(t, err)
		require.Equal(t, demo.Readme, res.Contents[0].Text)

		op := `resources/read "demo://nope"`
		_, err = m.ReadResource(context.Background(), "demo://nope", "", 0)
		requireCode(t, err, manager.ErrServerNotFound, "", op)
		require.EqualError(t, err, op+": no server lists this resource; pass {server = name} to read it from a given server")

		_, err = m.ReadResource(context.Background(), "demo://nope", "demo", 0)
		requireCode(t, err, manager.ErrInvocationFailed, "demo", op)

		_, err = m.ReadResource(context.Background(), demo.ReadmeURI, "nope", 0)
		requireCode(t, err, manager.ErrServerNotFound, "nope", `resources/read "demo://readme"`)
	})
}

// Two servers listing one URI: the reader must say which.
func TestReadResourceListedTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ps := fleet{"one": &peers{}, "two": &peers{}}
		m := newManager(t, manager.Options{Dial: ps.dial})
		require.NoError(t, m.Add("one", fakeSpec(t, nil)))
		require.NoError(t, m.Add("two", fakeSpec(t, nil)))
		waitConnected(t, m, "one", "two")
		op := `resources/read "demo://readme"`
		_, err := m.ReadResource(context.Background(), demo.ReadmeURI, "", 0)
		requireCode(t, err, manager.ErrAmbiguousTool, "", op)
		require.EqualError(t, err, op+": several servers list this resource: one, two; pass {server = name}")
		res, err := m.ReadResource(context.Background(), demo.ReadmeURI, "two", 0)
		require.NoError(t, err)
		require.Equal(t, demo.Readme, res.Contents[0].Text)
	})
}

func TestPrompts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t)
		prompts, err := m.Prompts("")
		require.NoError(t, err)
		require.Len(t, prompts, 1)
		require.Equal(t, "greet", prompts[0].Prompt.Name, "the prompt as the server listed it")
		prompts[0].Prompt = nil
		require.Equal(t, []manager.PromptInfo{{
			FullName: "demo.greet", Server: "demo", Name: "greet",
			Description: "Ask the model to greet someone.",
			Arguments:   []manager.PromptArgument{{Name: "name", Description: "who to greet", Required: true}},
			Available:   true,
		}}, prompts)

		res, err := m.GetPrompt(context.Background(), "demo.greet", map[string]string{"name": "Ada"}, 0)
		require.NoError(t, err)
		require.Equal(t, "Greet Ada", res.Description)
		require.Len(t, res.Messages, 1)
		require.Equal(t, "Say hello to Ada.", res.Messages[0].Content.(*mcp.TextContent).Text)

		_, err = m.GetPrompt(context.Background(), "demo.great", nil, 0)
		requireCode(t, err, manager.ErrPromptNotFound, "demo", `prompts/get "great"`)
		require.EqualError(t, err, `server "demo": prompts/get "great": server has no prompt "great"; its prompts: greet`)

		_, err = m.GetPrompt(context.Background(), "greet", nil, 0)
		requireCode(t, err, manager.ErrPromptNotFound, "", "prompts/get")
		require.EqualError(t, err, `prompts/get: prompt names are "server.prompt", got "greet"`)

		_, err = m.GetPrompt(context.Background(), "nope.greet", nil, 0)
		requireCode(t, err, manager.ErrServerNotFound, "nope", `prompts/get "greet"`)

		_, err = m.GetPrompt(context.Background(), "demo.greet", nil, 0)
		requireCode(t, err, manager.ErrInvocationFailed, "demo", `prompts/get "greet"`)
		require.Contains(t, err.Error(), `argument "name" is required`, "the server's own error is kept")

		_, err = m.Prompts("nope")
		requireCode(t, err, manager.ErrServerNotFound, "nope", "prompts")
		_, err = m.Resources("nope")
		requireCode(t, err, manager.ErrServerNotFound, "nope", "resources")
	})
}
