package gateway_test

// What a client may ask of a server other than its tools, forwarded
// through each endpoint to a real server process: completions, log
// messages during a call, elicitation forms.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// featureForm is the form the features server's form tool asks for: the
// kinds of field a form may have, with defaults, enums, their titles
// (enumNames and oneOf/anyOf) and titles of its own.
const featureForm = `{
	"type": "object",
	"title": "Deployment",
	"properties": {
		"name":   {"type": "string", "title": "Name", "description": "what to call it", "default": "web", "minLength": 1, "maxLength": 20},
		"region": {"type": "string", "title": "Region", "enum": ["eu", "us"], "enumNames": ["Europe", "United States"], "default": "eu"},
		"size":   {"type": "string", "title": "Size", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}], "default": "s"},
		"zones":  {"type": "array", "title": "Zones", "items": {"anyOf": [{"const": "a", "title": "Zone A"}, {"const": "b", "title": "Zone B"}]}, "default": ["a"]},
		"labels": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "anyOf": [{"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]}},
		"tier":   {"type": "array", "items": {"type": "string", "enum": ["gold", "silver"]}, "default": ["gold"]},
		"count":  {"type": "integer", "title": "Count", "minimum": 1, "maximum": 9, "default": 3},
		"ratio":  {"type": "number", "default": 0.5},
		"public": {"type": "boolean", "title": "Public", "default": false},
		"email":  {"type": "string", "format": "email"}
	},
	"required": ["name"]
}`

// featuresServer has a prompt and a resource template it completes
// arguments of, a tool that logs as it works and one that asks for
// featureForm.
func featuresServer() *mcp.Server {
	complete := func(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		var values []string
		switch ref := req.Params.Ref; {
		case ref.Type == "ref/prompt" && ref.Name == "greet" && req.Params.Argument.Name == "name":
			values = []string{"alice", "albert", "bob"}
		case ref.Type == "ref/resource" && ref.URI == "notes:///{topic}" && req.Params.Argument.Name == "topic":
			values = []string{"go", "gophers", "lua"}
		default:
			return nil, fmt.Errorf("nothing to complete for %s %q%q argument %q", ref.Type, ref.Name, ref.URI, req.Params.Argument.Name)
		}
		values = slices.DeleteFunc(values, func(v string) bool { return !strings.HasPrefix(v, req.Params.Argument.Value) })
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: len(values)}}, nil
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "features", Version: "1"}, &mcp.ServerOptions{CompletionHandler: complete})
	// The go-sdk's server side refuses the answer to some valid forms
	// (labels: a titled multi-select with typed items) after its client
	// gave it; this server takes the answer as given, as the TypeScript
	// SDK's servers do.
	s.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if p, ok := req.GetParams().(*mcp.ElicitParams); ok && p != nil {
				p.RequestedSchema = nil // the SDK checks the answer against what is left here
			}
			return res, err
		}
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "name"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi " + req.Params.Arguments["name"]}}}}, nil
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "note", URITemplate: "notes:///{topic}"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "a note"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "chatty", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "details"})
			for _, msg := range []string{"starting", "working", "finishing"} {
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg})
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "later", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// A message after the call is over, as a server reporting on
			// work it goes on with.
			go func() {
				time.Sleep(50 * time.Millisecond)
				_ = req.Session.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: "later"})
			}()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "started"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "form", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "Deploy what?", RequestedSchema: json.RawMessage(featureForm)})
			if err != nil {
				return nil, err
			}
			out, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(out)}}}, nil
		})
	return s
}

// featuresRig serves the features server as "feat" beside the demo
// server, which completes nothing, and a toolset of feat's tools.
func featuresRig(t *testing.T) *rig {
	t.Helper()
	r := newRig(t, map[string]manager.Spec{
		"feat": selfServer(t, "features", nil),
		"demo": selfServer(t, "demo", nil),
	}, gateway.HTTPOptions{})
	r.gw.SetToolsets(map[string]gateway.Toolset{"feats": {Include: []string{"feat.*"}}})
	r.wait("feat")
	r.wait("demo")
	return r
}

func complete(cs *mcp.ClientSession, ref *mcp.CompleteReference, arg, value string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
	if err != nil {
		return nil, err
	}
	return res.Completion.Values, nil
}

// A client completes a prompt's argument by the prompt's name as it sees
// it, and a resource template's by its URI template, through /mcp and the
// server's own endpoint; the endpoints that can complete nothing say so.
func TestCompletionsReachTheServerThatOwnsThePrompt(t *testing.T) {
	t.Parallel()
	r := featuresRig(t)
	for _, tc := range []struct {
		path, prompt string
	}{
		{"/mcp", "feat__greet"},
		{"/servers/feat/mcp", "greet"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			cs := connect(t, r.streamable(tc.path), nil)
			require.NotNil(t, cs.InitializeResult().Capabilities.Completions, "completions not declared")
			got, err := complete(cs, &mcp.CompleteReference{Type: "ref/prompt", Name: tc.prompt}, "name", "al")
			require.NoError(t, err)
			require.Equal(t, []string{"alice", "albert"}, got)
			got, err = complete(cs, &mcp.CompleteReference{Type: "ref/resource", URI: "notes:///{topic}"}, "topic", "go")
			require.NoError(t, err)
			require.Equal(t, []string{"go", "gophers"}, got)

			// What the server cannot complete is its answer, naming it.
			_, err = complete(cs, &mcp.CompleteReference{Type: "ref/prompt", Name: tc.prompt}, "mood", "")
			var rpc *jsonrpc.Error
			require.ErrorAs(t, err, &rpc)
			require.Contains(t, rpc.Message, `server "feat"`)
			require.Contains(t, rpc.Message, "completion/complete")
		})
	}
	t.Run("a prompt no server lists", func(t *testing.T) {
		cs := connect(t, r.streamable("/mcp"), nil)
		_, err := complete(cs, &mcp.CompleteReference{Type: "ref/prompt", Name: "feat__nope"}, "name", "")
		var rpc *jsonrpc.Error
		require.ErrorAs(t, err, &rpc)
		require.EqualValues(t, jsonrpc.CodeInvalidParams, rpc.Code)
		require.Contains(t, rpc.Message, "feat__nope")
	})
	t.Run("endpoints with nothing to complete", func(t *testing.T) {
		for _, path := range []string{"/servers/demo/mcp", "/toolsets/feats/mcp"} {
			cs := connect(t, r.streamable(path), nil)
			require.Nil(t, cs.InitializeResult().Capabilities.Completions, "%s declares completions", path)
		}
	})
}

// A form reaches the client exactly as the server asked for it, and the
// answer reaches the server.
func TestElicitationFormsPassUntouched(t *testing.T) {
	t.Parallel()
	r := featuresRig(t)
	for _, tc := range []struct{ path, tool string }{
		{"/servers/feat/mcp", "form"},
		{"/mcp", "feat__form"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var asked []byte
			c := mcp.NewClient(&mcp.Implementation{Name: "form-test", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return nil, errors.New("answered by the middleware")
				},
			})
			// The go-sdk client refuses some valid forms (a titled
			// multi-select with a typed items schema) before its handler
			// runs: this client reads the request as it came.
			c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					r, ok := req.(*mcp.ElicitRequest)
					if !ok {
						return next(ctx, method, req)
					}
					var err error
					if asked, err = json.Marshal(r.Params.RequestedSchema); err != nil {
						return nil, errors.New("unreadable form")
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "api", "region": "us", "size": "l",
						"zones": []any{"b"}, "labels": []any{"x", "y"}, "count": 2, "ratio": 0.5, "public": true}}, nil
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, r.streamable(tc.path), sessionOver(r.streamable(tc.path)))
			require.NoError(t, err)
			defer cs.Close()
			res := call(t, cs, tc.tool, nil)
			require.False(t, res.IsError, text(res))
			require.JSONEq(t, featureForm, string(asked))
			require.Equal(t, `accept {"count":2,"labels":["x","y"],"name":"api","public":true,"ratio":0.5,"region":"us","size":"l","tier":["gold"],"zones":["b"]}`, text(res))
		})
	}
}

// rawSession is a streamable HTTP session opened by hand, to see what
// goes on the wire in which order.
type rawSession struct {
	t   *testing.T
	url string
	id  string
	seq int
}

func openRaw(t *testing.T, url string) *rawSession {
	t.Helper()
	status, _, h := post(t, url, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`, nil)
	require.Equal(t, 200, status)
	s := &rawSession{t: t, url: url, id: h.Get("Mcp-Session-Id")}
	require.NotEmpty(t, s.id)
	status, _, _ = post(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, s.header())
	require.Equal(t, 202, status)
	return s
}

func (s *rawSession) header() map[string]string {
	return map[string]string{"Mcp-Session-Id": s.id, "Mcp-Protocol-Version": "2025-11-25"}
}

// request sends a request and returns the messages of its response
// stream, in order, or its JSON answer.
func (s *rawSession) request(method string, params any) []map[string]any {
	s.t.Helper()
	s.seq++
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.seq, "method": method, "params": params})
	require.NoError(s.t, err)
	status, out, _ := post(s.t, s.url, string(body), s.header())
	require.Equal(s.t, 200, status, out)
	var msgs []map[string]any
	for line := range strings.SplitSeq(out, "\n") {
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		if !ok || strings.TrimSpace(data) == "" {
			continue
		}
		var m map[string]any
		require.NoError(s.t, json.Unmarshal([]byte(data), &m), data)
		msgs = append(msgs, m)
	}
	if msgs == nil && strings.HasPrefix(strings.TrimSpace(out), "{") { // a JSON answer (the fast path's when nothing came before it)
		var m map[string]any
		require.NoError(s.t, json.Unmarshal([]byte(out), &m), out)
		msgs = append(msgs, m)
	}
	return msgs
}

// Log messages a server sends while serving a call reach the client that
// made it on the call's own stream, before the call's result, through
// every endpoint that serves the server, at the level the client set,
// with the fast path on (which answers the calls) and off.
func TestLogsOfACallComeBeforeItsResult(t *testing.T) {
	t.Parallel()
	for _, setting := range []string{"on", "off"} {
		t.Run("fast path "+setting, func(t *testing.T) {
			t.Parallel()
			logsBeforeResult(t, featuresRigWith(t, setting), setting)
		})
	}
}

// logsBeforeResult is TestLogsOfACallComeBeforeItsResult on r, whose
// fast path is as setting says.
func logsBeforeResult(t *testing.T, r *rig, setting string) {
	for _, tc := range []struct {
		path, tool string
		fast       bool // the fast path answers its calls
	}{
		{"/mcp", "feat__chatty", true},
		{"/servers/feat/mcp", "chatty", true},
		{"/toolsets/feats/mcp", "feat__chatty", true},
	} {
		t.Run(tc.path, func(t *testing.T) {
			before := gateway.FastServed(r.gw)
			defer func() {
				if served := gateway.FastServed(r.gw) - before; setting == "on" && tc.fast {
					require.EqualValues(t, 4, served, "the fast path answered")
				} else {
					require.Zero(t, served)
				}
			}()
			s := openRaw(t, r.base+tc.path)
			require.Len(t, s.request("logging/setLevel", map[string]any{"level": "info"}), 1)
			for i := range 3 {
				var got []string
				for _, m := range s.request("tools/call", map[string]any{"name": tc.tool, "arguments": map[string]any{}}) {
					switch {
					case m["method"] == "notifications/message":
						p, _ := m["params"].(map[string]any)
						got = append(got, fmt.Sprint(p["data"]))
					case m["result"] != nil:
						got = append(got, "result")
					}
				}
				require.Equal(t, []string{"starting", "working", "finishing", "result"}, got, "call %d", i)
			}
			// Above the client's level, nothing comes.
			require.Len(t, s.request("logging/setLevel", map[string]any{"level": "error"}), 1)
			got := s.request("tools/call", map[string]any{"name": tc.tool, "arguments": map[string]any{}})
			require.Len(t, got, 1, "messages below the client's level were sent: %v", got)
		})
	}
}

// A log message a server sends between calls reaches the clients of every
// endpoint that serves one of its tools and set a logging level: /mcp,
// the server's own and a toolset's.
func TestLogsBetweenCallsReachEveryEndpoint(t *testing.T) {
	t.Parallel()
	r := featuresRig(t)
	for _, tc := range []struct{ path, tool string }{
		{"/mcp", "feat__later"},
		{"/servers/feat/mcp", "later"},
		{"/toolsets/feats/mcp", "feat__later"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			heard := make(chan string, 10)
			c := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{
				LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
					heard <- fmt.Sprint(req.Params.Data)
				},
			})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// A session of 2025-11-25, which has a stream for what the
			// server says between requests.
			cs, err := c.Connect(ctx, r.streamable(tc.path), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			require.NoError(t, err)
			defer cs.Close()
			require.NoError(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
			res := call(t, cs, tc.tool, nil)
			require.Equal(t, "started", text(res))
			select {
			case got := <-heard:
				require.Equal(t, "later", got)
			case <-time.After(10 * time.Second):
				t.Fatal("the message sent after the call never came")
			}
		})
	}
}

// A client that asks for more than mcpvisor asks of its servers by
// default (debug) hears it: the level is asked of the servers while a
// client holds it, and the client's own level still filters.
func TestLogLevelReachesTheServer(t *testing.T) {
	t.Parallel()
	r := featuresRig(t)
	s := openRaw(t, r.base+"/servers/feat/mcp")
	quiet := openRaw(t, r.base+"/servers/feat/mcp") // at the default
	require.Len(t, quiet.request("logging/setLevel", map[string]any{"level": "info"}), 1)
	require.Len(t, s.request("logging/setLevel", map[string]any{"level": "debug"}), 1)
	logs := func(s *rawSession) []string {
		var got []string
		for _, m := range s.request("tools/call", map[string]any{"name": "chatty", "arguments": map[string]any{}}) {
			if m["method"] == "notifications/message" {
				p, _ := m["params"].(map[string]any)
				got = append(got, fmt.Sprint(p["level"], " ", p["data"]))
			}
		}
		return got
	}
	all := []string{"debug details", "info starting", "info working", "info finishing"}
	pollUntil(t, 10*time.Second, "the server asked for debug", func() bool { return slices.Equal(logs(s), all) })
	require.Equal(t, all[1:], logs(quiet), "a client at info hears no debug")
}

// A client given a shorter name budget completes a prompt by the name its
// own list gives it.
func TestCompletionUnderAClientBudget(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{
		"longservername": {Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: featuresServer()}},
	}, gateway.HTTPOptions{})
	r.gw.SetClientBudgets([]gateway.ClientBudget{{Client: "short", Budget: 16}})
	r.wait("longservername")
	cs := connectAs(t, r.streamable("/mcp"), "short")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var name string
	for p, err := range cs.Prompts(ctx, nil) {
		require.NoError(t, err)
		name = p.Name
	}
	require.LessOrEqual(t, len(name), 16)
	require.NotEqual(t, "longservername__greet", name)
	got, err := complete(cs, &mcp.CompleteReference{Type: "ref/prompt", Name: name}, "name", "b")
	require.NoError(t, err)
	require.Equal(t, []string{"bob"}, got)
}

// conformanceServer builds the go-sdk's conformance everything-server
// (part of the go-sdk module) and declares it over stdio.
func conformanceServer(t *testing.T) manager.Spec {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "everything-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput()
	require.NoError(t, err, "building the conformance everything-server: %s", out)
	return manager.Spec{Transport: manager.TransportStdio, Command: []string{bin}}
}

// The conformance everything-server's completions answer through the
// gateway as they do directly.
func TestConformanceServerCompletes(t *testing.T) {
	t.Parallel()
	r := newRig(t, map[string]manager.Spec{"conf": conformanceServer(t)}, gateway.HTTPOptions{})
	r.wait("conf")
	for _, tc := range []struct{ path, prompt string }{
		{"/mcp", "conf__test_prompt_with_arguments"},
		{"/servers/conf/mcp", "test_prompt_with_arguments"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			cs := connect(t, r.streamable(tc.path), nil)
			require.NotNil(t, cs.InitializeResult().Capabilities.Completions)
			got, err := complete(cs, &mcp.CompleteReference{Type: "ref/prompt", Name: tc.prompt}, "arg1", "a")
			require.NoError(t, err)
			require.Empty(t, got, "the server completes nothing")
		})
	}
}
