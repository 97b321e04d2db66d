package manager_test

// Interop tests: the manager against the official reference server,
// @modelcontextprotocol/server-everything, over each transport, in real
// time. The interop helpers skip these tests when node or the pinned
// server is not installed (npm ci --prefix internal/interop), and fail them
// when MCPVISOR_INTEROP=1.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/interop"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

const (
	// interopConnectWait bounds the first connection: node starts in well
	// under a second, but CI machines can be slow.
	interopConnectWait = 30 * time.Second
	// interopProtocol is what go-sdk v1.8.0 negotiates with the pinned
	// server, whose TS SDK does not know 2026-07-28 (internal/interop/doc.go).
	interopProtocol = "2025-11-25"
)

// interopEnv returns what interop.Env adds to this process's environment,
// as Spec.Env (which the manager adds to the host's environment itself).
func interopEnv() map[string]string {
	base := make(map[string]bool)
	for _, kv := range os.Environ() {
		base[kv] = true
	}
	extra := make(map[string]string)
	for _, kv := range interop.Env() {
		if !base[kv] {
			k, v, _ := strings.Cut(kv, "=")
			extra[k] = v
		}
	}
	return extra
}

func TestInterop(t *testing.T) {
	tests := []struct {
		name string
		// spec starts the server if needed and declares it.
		spec func(t *testing.T) manager.Spec
	}{
		{"stdio", func(t *testing.T) manager.Spec {
			return manager.Spec{
				Transport: manager.TransportStdio,
				Command:   interop.StdioCommand(t),
				Env:       interopEnv(),
			}
		}},
		{"streamable HTTP", func(t *testing.T) manager.Spec {
			return manager.Spec{Transport: manager.TransportHTTP, URL: interop.StartHTTP(t)}
		}},
		{"SSE", func(t *testing.T) manager.Spec {
			return manager.Spec{Transport: manager.TransportSSE, URL: interop.StartSSE(t)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec(t)
			// After spec: the HTTP server's own goroutines (its process
			// waiter) live until the test's cleanup and are not ours.
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			if spec.Transport == manager.TransportStdio {
				defer func() { require.Empty(t, zombies(t), "children of the test process left as zombies") }()
			}
			testInterop(t, spec)
		})
	}
}

// interopManager returns a manager and the function that closes it (to
// defer: the callers' leak checks run after it), which first logs the
// events it published if the test failed.
func interopManager(t *testing.T) (*manager.Manager, func()) {
	m := manager.New(manager.Options{})
	return m, func() {
		if t.Failed() {
			for _, e := range m.Bus().History(200) {
				t.Logf("event: %s", e.Format())
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, m.Close(ctx), "Close")
	}
}

// testInterop runs one server through the manager: connect, discover,
// call, fail to call, remove. It closes the manager before returning.
func testInterop(t *testing.T, spec manager.Spec) {
	m, closeManager := interopManager(t)
	defer closeManager()
	ctx, cancel := context.WithTimeout(context.Background(), interopConnectWait)
	defer cancel()

	require.NoError(t, m.Add("everything", spec))
	st, err := m.Wait(ctx, "everything", manager.StateConnected)
	require.NoError(t, err, "waiting for connected; status %+v", st)

	t.Run("status", func(t *testing.T) {
		st, err := m.Status("everything")
		require.NoError(t, err)
		assert.Equal(t, manager.StateConnected, st.State)
		assert.Equal(t, spec.Transport, st.Transport)
		assert.Equal(t, interopProtocol, st.Protocol)
		assert.Equal(t, "mcp-servers/everything", st.ServerName)
		assert.NotEmpty(t, st.ServerVersion)
		assert.Empty(t, st.LastError)
		assert.Zero(t, st.Attempts)
		assert.False(t, st.ConnectedAt.IsZero(), "ConnectedAt")
		assert.GreaterOrEqual(t, st.Tools, len(interop.BaseTools))
		if spec.Transport == manager.TransportStdio {
			assert.Positive(t, st.PID)
			assert.Equal(t, strings.Join(spec.Command, " "), st.Endpoint)
		} else {
			assert.Zero(t, st.PID)
			assert.Equal(t, spec.URL, st.Endpoint)
		}
	})

	t.Run("tools", func(t *testing.T) {
		tools, err := m.Tools("everything")
		require.NoError(t, err)
		var names []string
		for _, ti := range tools {
			names = append(names, ti.FullName)
			assert.Equal(t, "everything", ti.Server, ti.FullName)
			assert.Equal(t, "everything."+ti.Name, ti.FullName)
			assert.True(t, ti.Available, "%s available", ti.FullName)
		}
		for _, base := range interop.BaseTools {
			assert.Contains(t, names, "everything."+base)
		}
		i := slices.IndexFunc(tools, func(ti manager.ToolInfo) bool { return ti.FullName == "everything.echo" })
		require.GreaterOrEqual(t, i, 0, "everything.echo in %v", names)
		echo := tools[i]
		assert.NotEmpty(t, echo.Description)
		require.NotNil(t, echo.InputSchema, "echo's input schema")
		raw, err := json.Marshal(echo.InputSchema)
		require.NoError(t, err)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		require.NoError(t, json.Unmarshal(raw, &schema), "%s", raw)
		assert.Equal(t, "object", schema.Type, "%s", raw)
		assert.Contains(t, schema.Properties, "message", "%s", raw)
		assert.Contains(t, schema.Required, "message", "%s", raw)
	})

	t.Run("call echo", func(t *testing.T) {
		for _, name := range []string{"everything.echo", "echo"} { // full and bare names
			res, err := m.Call(ctx, name, map[string]any{"message": "hi"}, manager.CallOptions{})
			require.NoError(t, err, name)
			require.False(t, res.IsError, "%s: %+v", name, res.Content)
			require.Len(t, res.Content, 1, name)
			text, ok := res.Content[0].(*mcp.TextContent)
			require.True(t, ok, "%s: content is %T", name, res.Content[0])
			assert.Equal(t, "Echo: hi", text.Text, name)
		}
	})

	t.Run("call structured content", func(t *testing.T) {
		res, err := m.Call(ctx, "everything.get-structured-content", map[string]any{"location": "Chicago"}, manager.CallOptions{})
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
		require.NotNil(t, res.StructuredContent)
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var weather struct {
			Temperature float64 `json:"temperature"`
			Conditions  string  `json:"conditions"`
			Humidity    float64 `json:"humidity"`
		}
		require.NoError(t, json.Unmarshal(raw, &weather), "%s", raw)
		assert.Equal(t, 36.0, weather.Temperature)
		assert.Equal(t, "Light rain / drizzle", weather.Conditions)
		assert.Equal(t, 82.0, weather.Humidity)
	})

	t.Run("call unknown tool", func(t *testing.T) {
		for _, name := range []string{"everything.no-such-tool", "no-such-tool"} {
			_, err := m.Call(ctx, name, map[string]any{}, manager.CallOptions{})
			require.Error(t, err, name)
			assert.True(t, errors.Is(err, manager.ErrToolNotFound), "%s: %v", name, err)
			assert.Contains(t, err.Error(), "no-such-tool")
		}
	})

	// The server is still connected after all that.
	st, err = m.Status("everything")
	require.NoError(t, err)
	require.Equal(t, manager.StateConnected, st.State, "last error: %s", st.LastError)

	t.Run("remove", func(t *testing.T) {
		done, err := m.Remove("everything")
		require.NoError(t, err)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("server not disposed 15s after Remove")
		}
		_, err = m.Status("everything")
		assert.True(t, errors.Is(err, manager.ErrServerNotFound), "Status after Remove: %v", err)
		tools, err := m.Tools("")
		require.NoError(t, err)
		assert.Empty(t, tools, "tools after Remove")
		if spec.Transport == manager.TransportStdio {
			// Setpgid: the group id is the server's pid.
			requireGroupGone(t, st.PID)
		}
	})
}

// ---- the whole surface of server-everything, checked against a plain
// go-sdk client of the same server ----

// TestInteropSurface drives server-everything through the manager over
// stdio and streamable HTTP and checks, per transport:
//
//   - tools: the manager lists exactly the tools a plain go-sdk client lists
//     from the same server (after both saw the server's post-connect
//     tools/list_changed), each with the same input schema;
//   - bad arguments: refused locally with INVALID_ARGUMENTS naming the JSON
//     path, proven by a wire tap (tee on stdin for stdio, a reverse proxy for
//     HTTP) that records every tools/call the server is sent: after two bad
//     calls and one good one it holds exactly the good one;
//   - list_changed: the post-connect tools/list_changed, and the
//     resources/list_changed that gzip-file-as-resource triggers, arrive as
//     notices, the latter followed by a resources_changed event
//     adding the new resource's URI, which Resources then lists and
//     ReadResource reads back (gunzipped, equal to what was sent);
//   - progress: trigger-long-running-operation's notifications reach
//     CallOptions.Progress in increasing order and appear as notices with
//     method notifications/progress, in the same order;
//   - get-structured-content decodes, and equals its text block;
//   - resources and prompts: listed as the plain client lists them; a static
//     document read equals the file the server serves; a prompt renders.
func TestInteropSurface(t *testing.T) {
	tests := []struct {
		name string
		// start starts the server if needed and returns its spec and a
		// transport for a plain go-sdk client of the same server.
		start func(t *testing.T) (manager.Spec, func() mcp.Transport)
		// tapped starts the server behind a wire tap recording the
		// JSON-RPC messages the client sends; calls returns the tools/call
		// requests the tap has seen so far, as "tool <arguments JSON>".
		tapped func(t *testing.T) (spec manager.Spec, calls func() []string)
	}{
		{"stdio", interopStdio, interopTappedStdio},
		{"streamable HTTP", interopHTTP, interopTappedHTTP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, plain := tt.start(t)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			if spec.Transport == manager.TransportStdio {
				defer func() { require.Empty(t, zombies(t), "children of the test process left as zombies") }()
			}
			want := interopPlainList(t, plain())
			testInteropSurface(t, spec, want)
			t.Run("bad arguments never reach the server", func(t *testing.T) {
				spec, calls := tt.tapped(t)
				testInteropBadArguments(t, spec, calls)
			})
		})
	}
}

func interopStdio(t *testing.T) (manager.Spec, func() mcp.Transport) {
	argv := interop.StdioCommand(t)
	spec := manager.Spec{Transport: manager.TransportStdio, Command: argv, Env: interopEnv()}
	return spec, func() mcp.Transport {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = interop.Env()
		return &mcp.CommandTransport{Command: cmd}
	}
}

func interopHTTP(t *testing.T) (manager.Spec, func() mcp.Transport) {
	url := interop.StartHTTP(t)
	spec := manager.Spec{Transport: manager.TransportHTTP, URL: url}
	return spec, func() mcp.Transport {
		// interopPlainList closes its idle connections.
		return &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &http.Transport{}}, MaxRetries: 1}
	}
}

// interopTappedStdio runs the server behind `tee`, which copies everything
// the host writes to the server's stdin into a file.
func interopTappedStdio(t *testing.T) (manager.Spec, func() []string) {
	argv := interop.StdioCommand(t)
	log := filepath.Join(t.TempDir(), "stdin.jsonl")
	// sh -c SCRIPT $0 $1 …: tee and the server share the process group the
	// manager made, so stopping the group stops both.
	cmd := append([]string{"/bin/sh", "-c", `tee "$0" | exec "$@"`, log}, argv...)
	spec := manager.Spec{Transport: manager.TransportStdio, Command: cmd, Env: interopEnv()}
	return spec, func() []string {
		b, err := os.ReadFile(log)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("reading the tap: %v", err)
		}
		return interopToolCalls(t, bytes.Split(b, []byte("\n")))
	}
}

// interopTappedHTTP puts a reverse proxy in front of the server that
// records the body of every POST before forwarding it.
func interopTappedHTTP(t *testing.T) (manager.Spec, func() []string) {
	target, err := url.Parse(interop.StartHTTP(t))
	require.NoError(t, err)
	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	pool := &http.Transport{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
			r.Out.URL.Path = target.Path
		},
		Transport:     pool,
		FlushInterval: -1, // SSE streams pass through at once
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			mu.Lock()
			bodies = append(bodies, body)
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		front.Close()
		pool.CloseIdleConnections()
	})
	spec := manager.Spec{Transport: manager.TransportHTTP, URL: front.URL + target.Path}
	return spec, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return interopToolCalls(t, bodies)
	}
}

// interopToolCalls picks the tools/call requests out of JSON-RPC messages
// (one per item; blank items are skipped) as "tool <arguments JSON>".
func interopToolCalls(t *testing.T, msgs [][]byte) []string {
	var calls []string
	for _, raw := range msgs {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal(raw, &msg), "tapped message %s", raw)
		if msg.Method == "tools/call" {
			calls = append(calls, msg.Params.Name+" "+string(msg.Params.Arguments))
		}
	}
	return calls
}

// interopListing is what a plain go-sdk client lists from the server.
type interopListing struct {
	tools     map[string]json.RawMessage // name → input schema
	resources []string                   // URIs and URI templates, sorted
	prompts   map[string][]manager.PromptArgument
}

// interopPlainList connects a plain go-sdk client (no capabilities, as the
// manager's) over t, waits for the tools/list_changed the server sends
// after connect, lists everything and disconnects.
func interopPlainList(t *testing.T, tr mcp.Transport) interopListing {
	ctx, cancel := context.WithTimeout(context.Background(), interopConnectWait)
	defer cancel()
	changed := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "v0"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	if st, ok := tr.(*mcp.StreamableClientTransport); ok {
		defer st.HTTPClient.CloseIdleConnections() // after Close
	}
	cs, err := client.Connect(ctx, tr, nil)
	require.NoError(t, err, "plain go-sdk client: connect")
	defer func() { assert.NoError(t, cs.Close(), "plain go-sdk client: close") }()
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("plain go-sdk client: no tools/list_changed after connect")
	}
	var l interopListing
	l.tools = make(map[string]json.RawMessage)
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err, "plain go-sdk client: tools/list")
		raw, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		l.tools[tool.Name] = raw
	}
	for r, err := range cs.Resources(ctx, nil) {
		require.NoError(t, err, "plain go-sdk client: resources/list")
		l.resources = append(l.resources, r.URI)
	}
	for r, err := range cs.ResourceTemplates(ctx, nil) {
		require.NoError(t, err, "plain go-sdk client: resources/templates/list")
		l.resources = append(l.resources, r.URITemplate)
	}
	l.prompts = make(map[string][]manager.PromptArgument)
	for p, err := range cs.Prompts(ctx, nil) {
		require.NoError(t, err, "plain go-sdk client: prompts/list")
		var args []manager.PromptArgument
		for _, a := range p.Arguments {
			args = append(args, manager.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		l.prompts[p.Name] = args
	}
	slices.Sort(l.resources)
	return l
}

// interopAwait receives events from sub until one matches, failing t when
// ctx ends first; skipped events are logged on failure.
func interopAwait(t *testing.T, ctx context.Context, sub *events.Subscription, what string, match func(events.Event) bool) events.Event {
	t.Helper()
	var skipped []string
	for {
		e, err := sub.Recv(ctx)
		if err != nil {
			t.Fatalf("no %s event: %v; saw:\n%s", what, err, strings.Join(skipped, "\n"))
		}
		if match(e) {
			return e
		}
		skipped = append(skipped, e.Format())
	}
}

// interopHear waits for the next notice of server with method on l,
// skipping others.
func interopHear(t *testing.T, ctx context.Context, l *notify.Listener, server, method string) notify.Notice {
	t.Helper()
	var skipped []string
	for {
		n, err := l.Next(ctx)
		if err != nil {
			t.Fatalf("no %s notice: %v; saw:\n%s", method, err, strings.Join(skipped, "\n"))
		}
		if n.From().Server == server && n.Fields()["method"] == method {
			return n
		}
		skipped = append(skipped, fmt.Sprint(n.Fields()))
	}
}

func testInteropSurface(t *testing.T, spec manager.Spec, plain interopListing) {
	m, closeManager := interopManager(t)
	defer closeManager()
	ctx, cancel := context.WithTimeout(context.Background(), interopConnectWait)
	defer cancel()
	// Each subtest has its own budget, so one that fails by waiting in vain
	// does not starve the next.
	subCtx := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		t.Cleanup(cancel)
		return ctx
	}

	// Subscribed before Add: the tools/list_changed the server sends right
	// after connect is seen whenever it comes.
	notes := m.Notices().Listen(notify.ListenOptions{})
	defer notes.Close()
	require.NoError(t, m.Add("everything", spec))
	st, err := m.Wait(ctx, "everything", manager.StateConnected)
	require.NoError(t, err, "waiting for connected; status %+v", st)

	t.Run("tools list_changed after connect", func(t *testing.T) {
		ctx := subCtx(t)
		interopHear(t, ctx, notes, "everything", "notifications/tools/list_changed")
	})

	t.Run("tools as a plain client lists them", func(t *testing.T) {
		ctx := subCtx(t)
		// Forced: the re-list the notification asked for may still run.
		tools, errs, err := m.Discover(ctx, "everything", true)
		require.NoError(t, err)
		require.Empty(t, errs)
		got := make(map[string]json.RawMessage)
		for _, ti := range tools {
			require.NotNil(t, ti.InputSchema, "%s has no input schema", ti.FullName)
			raw, err := json.Marshal(ti.InputSchema)
			require.NoError(t, err)
			got[ti.Name] = raw
			assert.True(t, ti.Available, ti.FullName)
		}
		require.ElementsMatch(t, slices.Collect(maps.Keys(plain.tools)), slices.Collect(maps.Keys(got)), "tool names")
		for name, raw := range got {
			assert.JSONEq(t, string(plain.tools[name]), string(raw), "input schema of %s", name)
			var schema struct {
				Type string `json:"type"`
			}
			require.NoError(t, json.Unmarshal(raw, &schema))
			assert.Equal(t, "object", schema.Type, "input schema of %s: %s", name, raw)
		}
		for _, base := range interop.BaseTools {
			assert.Contains(t, got, base)
		}
	})

	t.Run("structured content", func(t *testing.T) {
		ctx := subCtx(t)
		res, err := m.Call(ctx, "everything.get-structured-content", map[string]any{"location": "New York"}, manager.CallOptions{})
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
		raw, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var weather struct {
			Temperature float64 `json:"temperature"`
			Conditions  string  `json:"conditions"`
			Humidity    float64 `json:"humidity"`
		}
		require.NoError(t, json.Unmarshal(raw, &weather), "%s", raw)
		assert.Equal(t, 33.0, weather.Temperature)
		assert.Equal(t, "Cloudy", weather.Conditions)
		assert.Equal(t, 82.0, weather.Humidity)
		require.Len(t, res.Content, 1)
		text, ok := res.Content[0].(*mcp.TextContent)
		require.True(t, ok, "content is %T", res.Content[0])
		assert.JSONEq(t, text.Text, string(raw), "structured content and its text block")
	})

	t.Run("progress", func(t *testing.T) {
		ctx := subCtx(t)
		notes := m.Notices().Listen(notify.ListenOptions{})
		defer notes.Close()
		got := make(chan manager.Progress, 16)
		res, err := m.Call(ctx, "everything.trigger-long-running-operation",
			map[string]any{"duration": 1, "steps": 3},
			manager.CallOptions{Progress: func(p manager.Progress) {
				select {
				case got <- p:
				default:
				}
			}})
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
		// Every notification is a notice, in the order sent.
		for i := range 3 {
			n := interopHear(t, ctx, notes, "everything", "notifications/progress")
			p, ok := n.(notify.Progress)
			require.True(t, ok, "%T", n)
			assert.Equal(t, float64(i+1), p.Progress, "%+v", p)
			assert.Equal(t, 3.0, p.Total, "%+v", p)
		}
		// The callback gets them all, in the same order. The SDK hands the
		// result to Call on its reader goroutine but runs notification
		// handlers on another, so the last one, sent just before the
		// result, may reach the callback just after Call returned (the
		// manager keeps a finished call's route a moment for it). The
		// notices were all three, i.e. their handlers have run.
		var seen []manager.Progress
		for len(seen) < 3 {
			select {
			case p := <-got:
				seen = append(seen, p)
			case <-ctx.Done():
				t.Fatalf("progress callback got %+v, want 3 notifications", seen)
			}
		}
		for i, p := range seen {
			assert.Equal(t, float64(i+1), p.Progress, "notification %d", i)
			assert.Equal(t, 3.0, p.Total, "notification %d", i)
		}
	})

	t.Run("resources list_changed", func(t *testing.T) {
		ctx := subCtx(t)
		sub := m.Bus().Subscribe(events.SubscribeOptions{})
		defer sub.Close()
		notes := m.Notices().Listen(notify.ListenOptions{})
		defer notes.Close()
		const content = "mcpvisor interop: gzip me\n"
		name := "issue4-" + strings.ReplaceAll(string(spec.Transport), " ", "-") + ".txt.gz"
		uri := "demo://resource/session/" + name
		res, err := m.Call(ctx, "everything.gzip-file-as-resource", map[string]any{
			"name":       name,
			"data":       "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(content)),
			"outputType": "resourceLink",
		}, manager.CallOptions{})
		require.NoError(t, err)
		require.False(t, res.IsError, "%+v", res.Content)
		require.Len(t, res.Content, 1)
		link, ok := res.Content[0].(*mcp.ResourceLink)
		require.True(t, ok, "content is %T", res.Content[0])
		assert.Equal(t, uri, link.URI)

		n := interopHear(t, ctx, notes, "everything", "notifications/resources/list_changed")
		c := interopAwait(t, ctx, sub, "resources_changed", func(e events.Event) bool {
			return e.Kind == events.KindResourcesChanged && e.Server == "everything"
		})
		assert.False(t, c.Time.Before(n.From().Time), "re-listed after the notification")
		assert.Equal(t, []string{uri}, c.Fields["added"], c.Format())
		assert.Empty(t, c.Fields["removed"], c.Format())

		list, err := m.Resources("everything")
		require.NoError(t, err)
		i := slices.IndexFunc(list, func(r manager.ResourceInfo) bool { return r.URI == uri })
		require.GreaterOrEqual(t, i, 0, "%s not listed", uri)
		assert.Equal(t, name, list[i].Name)
		assert.Equal(t, "application/gzip", list[i].MIMEType)

		read, err := m.ReadResource(ctx, uri, "", 0)
		require.NoError(t, err)
		require.Len(t, read.Contents, 1)
		zr, err := gzip.NewReader(bytes.NewReader(read.Contents[0].Blob))
		require.NoError(t, err)
		plainText, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.Equal(t, content, string(plainText))
	})

	t.Run("resources", func(t *testing.T) {
		ctx := subCtx(t)
		list, err := m.Resources("everything")
		require.NoError(t, err)
		var uris []string
		for _, r := range list {
			if !strings.HasPrefix(r.URI, "demo://resource/session/") { // added above
				uris = append(uris, r.URI)
			}
			assert.True(t, r.Available, r.URI)
		}
		slices.Sort(uris)
		assert.Equal(t, plain.resources, uris)

		const uri = "demo://resource/static/document/features.md"
		want, err := os.ReadFile(filepath.Join(interop.ServerDir(t), "dist", "docs", "features.md"))
		require.NoError(t, err)
		res, err := m.ReadResource(ctx, uri, "everything", 0)
		require.NoError(t, err)
		require.Len(t, res.Contents, 1)
		assert.Equal(t, uri, res.Contents[0].URI)
		assert.Equal(t, "text/markdown", res.Contents[0].MIMEType)
		assert.Equal(t, string(want), res.Contents[0].Text)
	})

	t.Run("prompts", func(t *testing.T) {
		ctx := subCtx(t)
		list, err := m.Prompts("everything")
		require.NoError(t, err)
		got := make(map[string][]manager.PromptArgument)
		for _, p := range list {
			got[p.Name] = p.Arguments
			assert.Equal(t, "everything."+p.Name, p.FullName)
			assert.True(t, p.Available, p.FullName)
		}
		assert.Equal(t, plain.prompts, got)
		require.Contains(t, got, "args-prompt")
		require.NotEmpty(t, got["args-prompt"])
		assert.Equal(t, manager.PromptArgument{Name: "city", Description: "Name of the city", Required: true}, got["args-prompt"][0])

		res, err := m.GetPrompt(ctx, "everything.args-prompt", map[string]string{"city": "Paris", "state": "Texas"}, 0)
		require.NoError(t, err)
		require.Len(t, res.Messages, 1)
		assert.Equal(t, mcp.Role("user"), res.Messages[0].Role)
		text, ok := res.Messages[0].Content.(*mcp.TextContent)
		require.True(t, ok, "content is %T", res.Messages[0].Content)
		assert.Equal(t, "What's weather in Paris, Texas?", text.Text)
	})

	st, err = m.Status("everything")
	require.NoError(t, err)
	require.Equal(t, manager.StateConnected, st.State, "last error: %s", st.LastError)
}

// testInteropBadArguments makes two calls with bad arguments and one good
// call through a tapped server, and checks that the tap saw only the good
// one. The wire is ordered (one stdin pipe; for HTTP the proxy records a
// request before forwarding it), so once the good call is on the tap,
// any earlier bad call would be too.
func testInteropBadArguments(t *testing.T, spec manager.Spec, calls func() []string) {
	m := manager.New(manager.Options{})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, m.Close(ctx), "Close")
	}()
	ctx, cancel := context.WithTimeout(context.Background(), interopConnectWait)
	defer cancel()
	require.NoError(t, m.Add("tapped", spec))
	st, err := m.Wait(ctx, "tapped", manager.StateConnected)
	require.NoError(t, err, "waiting for connected; status %+v", st)

	for _, tc := range []struct {
		tool string
		args map[string]any
		want []string // in the message
	}{
		{"echo", map[string]any{}, []string{"$.message: required property is missing"}},
		{"get-sum", map[string]any{"a": "one", "b": 2}, []string{`$.a: must be number, got string "one"`}},
	} {
		_, err := m.Call(ctx, "tapped."+tc.tool, tc.args, manager.CallOptions{})
		require.Error(t, err, tc.tool)
		t.Logf("refused: %v", err)
		assert.True(t, errors.Is(err, manager.ErrInvalidArguments), "%s: %v", tc.tool, err)
		var merr *manager.Error
		require.True(t, errors.As(err, &merr), "%s: %T", tc.tool, err)
		assert.Equal(t, "tapped", merr.Server)
		assert.Equal(t, `tools/call "`+tc.tool+`"`, merr.Op)
		for _, w := range tc.want {
			assert.Contains(t, err.Error(), w, tc.tool)
		}
	}
	res, err := m.Call(ctx, "tapped.get-sum", map[string]any{"a": 1, "b": 2}, manager.CallOptions{})
	require.NoError(t, err)
	require.False(t, res.IsError, "%+v", res.Content)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	assert.Equal(t, "The sum of 1 and 2 is 3.", text.Text)

	// tee writes its file after the server's pipe: the good call may show a
	// moment after its answer.
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, []string{`get-sum {"a":1,"b":2}`}, calls(), "tools/call requests on the wire")
	}, 5*time.Second, 10*time.Millisecond)
}
