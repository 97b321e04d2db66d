package demo

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// connect starts a demo server session and a client session over in-memory
// transports. Both are closed in t.Cleanup (which, inside a synctest bubble,
// runs before the bubble ends).
func connect(t *testing.T, server *mcp.Server) *mcp.ClientSession {
	t.Helper()
	return connectVersion(t, server, "")
}

// connectVersion is connect with a pinned protocol version ("" = SDK default,
// which is 2026-07-28 via server/discover in go-sdk v1.8.0).
func connectVersion(t *testing.T, server *mcp.Server, version string) *mcp.ClientSession {
	t.Helper()
	if server == nil {
		server = NewServer()
	}
	ctx := t.Context()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatalf("server connect: %v", err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "v0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		ss.Close()
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			t.Errorf("client close: %v", err)
		}
		if err := ss.Wait(); err != nil {
			t.Errorf("server session: %v", err)
		}
	})
	return cs
}

// bubble runs f in a synctest bubble and checks for leaked goroutines after.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	defer goleak.VerifyNone(t)
	synctest.Test(t, f)
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return res
}

func onlyText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want 1 content, got %d: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("want *mcp.TextContent, got %T", res.Content[0])
	}
	return tc.Text
}

func TestServerInfo(t *testing.T) {
	for _, version := range []string{"", "2025-11-25", "2025-06-18", "2024-11-05"} {
		t.Run("version="+version, func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				cs := connectVersion(t, nil, version)
				res := cs.InitializeResult()
				if info := res.ServerInfo; info == nil || info.Name != "mcpvisor-demo" || info.Version == "" {
					t.Fatalf("server info = %+v", info)
				}
				if version != "" && res.ProtocolVersion != version {
					t.Errorf("negotiated %q, want %q", res.ProtocolVersion, version)
				}
				t.Logf("negotiated protocol %s", res.ProtocolVersion)
				if got := onlyText(t, call(t, cs, "echo", map[string]any{"text": "hi"})); got != "hi" {
					t.Errorf("echo = %q", got)
				}
			})
		})
	}
}

func TestListTools(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs := connect(t, nil)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		tools := map[string]*mcp.Tool{}
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			tools[tool.Name] = tool
			if tool.Description == "" {
				t.Errorf("tool %s has no description", tool.Name)
			}
		}
		slices.Sort(names)
		if want := []string{"add", "echo", "fail", "sleep"}; !slices.Equal(names, want) {
			t.Fatalf("tools = %v, want %v", names, want)
		}

		// The client sees the input schema as generic JSON.
		raw, err := json.Marshal(tools["add"].InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Type       string `json:"type"`
			Required   []string
			Properties map[string]struct {
				Type        string `json:"type"`
				Description string `json:"description"`
			}
		}
		if err := json.Unmarshal(raw, &schema); err != nil {
			t.Fatal(err)
		}
		if schema.Type != "object" {
			t.Errorf("add schema type = %q", schema.Type)
		}
		slices.Sort(schema.Required)
		if !slices.Equal(schema.Required, []string{"a", "b"}) {
			t.Errorf("add schema required = %v, want [a b]", schema.Required)
		}
		for _, p := range []string{"a", "b"} {
			if got := schema.Properties[p]; got.Type != "integer" || got.Description == "" {
				t.Errorf("add schema property %s = %+v, want a described integer", p, got)
			}
		}
		if tools["add"].OutputSchema == nil {
			t.Error("add has no output schema")
		}
	})
}

func TestEcho(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs := connect(t, nil)
		for _, in := range []string{"hello", "", "  spaces  \n and lines\t", "ünïcödé ✓", `{"json":"not parsed"}`} {
			res := call(t, cs, "echo", map[string]any{"text": in})
			if res.IsError {
				t.Fatalf("echo(%q) is an error: %+v", in, res.Content)
			}
			if got := onlyText(t, res); got != in {
				t.Errorf("echo(%q) = %q", in, got)
			}
		}
	})
}

func TestAdd(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs := connect(t, nil)
		res := call(t, cs, "add", map[string]any{"a": 2, "b": 3})
		if res.IsError {
			t.Fatalf("add is an error: %+v", res.Content)
		}
		if got := onlyText(t, res); got != "5" {
			t.Errorf("add text = %q, want 5", got)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if string(raw) != `{"sum":5}` {
			t.Errorf("add structured content = %s, want {\"sum\":5}", raw)
		}

		res = call(t, cs, "add", map[string]any{"a": -7, "b": 1 << 40})
		if got := onlyText(t, res); got != "1099511627769" {
			t.Errorf("add big = %q", got)
		}
	})
}

func TestAddRejectsBadInput(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs := connect(t, nil)
		for _, args := range []map[string]any{
			{"a": 1.5, "b": 1},
			{"a": "1", "b": 1},
			{"a": 1},
		} {
			res := call(t, cs, "add", args)
			if !res.IsError {
				t.Errorf("add(%v) succeeded: %+v", args, res.Content)
			}
		}
	})
}

func TestSleep(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs := connect(t, nil)
		start := time.Now()
		res := call(t, cs, "sleep", map[string]any{"ms": 1500})
		if got := onlyText(t, res); got != "slept 1500ms" {
			t.Errorf("sleep text = %q", got)
		}
		if d := time.Since(start); d != 1500*time.Millisecond {
			t.Errorf("sleep took %v (fake time), want 1.5s", d)
		}

		res = call(t, cs, "sleep", map[string]any{"ms": -1})
		if !res.IsError {
			t.Errorf("sleep(-1) succeeded")
		}
	})
}

func TestSleepCancel(t *testing.T) {
	bubble(t, func(t *testing.T) {
		// Observe when the server's tools/call handler returns.
		handlerDone := make(chan error, 1)
		server := NewServer()
		server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if method == "tools/call" {
					if r, ok := res.(*mcp.CallToolResult); ok && r.IsError && err == nil {
						err = errors.New(r.Content[0].(*mcp.TextContent).Text)
					}
					handlerDone <- err
				}
				return res, err
			}
		})
		cs := connect(t, server)

		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		callErr := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60_000}})
			callErr <- err
		}()
		synctest.Wait() // the call is parked in the server's timer
		cancel()

		if err := <-callErr; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call returned %v, want context.Canceled", err)
		}
		if err := <-handlerDone; err == nil {
			t.Error("sleep handler returned success after cancellation")
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("cancellation took %v of fake time, want 0", d)
		}

		// The session is still usable.
		if got := onlyText(t, call(t, cs, "sleep", map[string]any{"ms": 1})); got != "slept 1ms" {
			t.Errorf("sleep after cancel = %q", got)
		}
		<-handlerDone
	})
}

func TestFail(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs := connect(t, nil)
		res := call(t, cs, "fail", map[string]any{"message": "boom: it broke"})
		if !res.IsError {
			t.Error("fail: IsError = false")
		}
		if got := onlyText(t, res); got != "boom: it broke" {
			t.Errorf("fail text = %q", got)
		}
	})
}

func TestResource(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs := connect(t, nil)
		list, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Resources) != 1 || list.Resources[0].URI != ReadmeURI || list.Resources[0].MIMEType != "text/plain" {
			t.Fatalf("resources = %+v", list.Resources)
		}
		res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: ReadmeURI})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Contents) != 1 {
			t.Fatalf("contents = %+v", res.Contents)
		}
		c := res.Contents[0]
		if c.URI != ReadmeURI || c.MIMEType != "text/plain" || c.Text != Readme {
			t.Errorf("readme = %+v", c)
		}

		if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "demo://nope"}); err == nil {
			t.Error("reading an unknown resource succeeded")
		}
	})
}

func TestPrompt(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs := connect(t, nil)
		list, err := cs.ListPrompts(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Prompts) != 1 || list.Prompts[0].Name != "greet" ||
			len(list.Prompts[0].Arguments) != 1 || list.Prompts[0].Arguments[0].Name != "name" {
			t.Fatalf("prompts = %+v", list.Prompts)
		}
		res, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) != 1 {
			t.Fatalf("messages = %+v", res.Messages)
		}
		m := res.Messages[0]
		if m.Role != "user" {
			t.Errorf("role = %q", m.Role)
		}
		if tc, ok := m.Content.(*mcp.TextContent); !ok || tc.Text != "Say hello to Ada." {
			t.Errorf("content = %#v", m.Content)
		}

		if _, err := cs.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet"}); err == nil {
			t.Error("greet without a name succeeded")
		}
	})
}

// serve runs Serve on a pair of pipes and returns a connected client session
// plus a channel with Serve's result.
func serve(t *testing.T, ctx context.Context) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, c2sR, s2cW) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "v0"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(t.Context(), &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	return cs, done
}

func TestServePeerClose(t *testing.T) {
	bubble(t, func(t *testing.T) {
		cs, done := serve(t, t.Context())
		if got := onlyText(t, call(t, cs, "echo", map[string]any{"text": "over pipes"})); got != "over pipes" {
			t.Errorf("echo = %q", got)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("client close: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve after peer close = %v, want nil", err)
		}
	})
}

func TestServeContextCancel(t *testing.T) {
	bubble(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cs, done := serve(t, ctx)
		call(t, cs, "echo", map[string]any{"text": "x"})
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Serve after cancel = %v, want context.Canceled", err)
		}
		// The server closed its end, so the client session ends too.
		_ = cs.Wait()
		cs.Close()
	})
}

func TestServeNil(t *testing.T) {
	if err := Serve(t.Context(), nil, nil); err == nil {
		t.Error("Serve(nil, nil) succeeded")
	}
}
