package luaapi_test

// mcp_handle and mcp_roots: the runtime answers what servers ask of their
// client, through the answerer it hands the manager.

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// askSpy is the manager as the runtime sees it, keeping the answerer the
// runtime hands it and reporting each RootsChanged.
type askSpy struct {
	luaapi.Manager
	mu sync.Mutex
	// mu guards answerer.
	answerer     ask.Answerer
	rootsChanged chan struct{}
}

func (s *askSpy) SetAnswerer(a ask.Answerer) {
	s.mu.Lock()
	s.answerer = a
	s.mu.Unlock()
	s.Manager.SetAnswerer(a)
}

func (s *askSpy) RootsChanged() {
	s.rootsChanged <- struct{}{}
	s.Manager.RootsChanged()
}

func (s *askSpy) host(t *testing.T) ask.Answerer {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotNil(t, s.answerer, "the runtime never handed the manager its answerer")
	return s.answerer
}

// changed waits for one RootsChanged.
func (s *askSpy) changed(t *testing.T) {
	t.Helper()
	select {
	case <-s.rootsChanged:
	case <-time.After(10 * time.Second):
		t.Fatal("the manager was not told that the roots changed")
	}
}

// fakePrompter answers every elicitation with answer and records who asked.
type fakePrompter struct {
	answer *mcp.ElicitResult
	asked  chan ask.From
}

func (p *fakePrompter) Elicit(ctx context.Context, from ask.From, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	p.asked <- from
	return p.answer, nil
}

func newAskRuntime(t *testing.T, opts ...func(*luaapi.Options)) (*testRuntime, *askSpy) {
	t.Helper()
	spy := &askSpy{rootsChanged: make(chan struct{}, 64)}
	opts = append([]func(*luaapi.Options){func(o *luaapi.Options) {
		spy.Manager = o.Manager
		o.Manager = spy
	}}, opts...)
	return newTestRuntime(t, nil, opts...), spy
}

// nameForm is a form with one required string and one integer.
func nameForm() *mcp.ElicitParams {
	return &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name": map[string]any{"type": "string"},
			"age":  map[string]any{"type": "integer", "minimum": 0},
		},
		"required": []any{"name"},
	}}
}

func askCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestHandleElicitation(t *testing.T) {
	from := ask.From{Server: "forms"}
	tests := []struct {
		name    string
		handler string
		params  *mcp.ElicitParams
		want    *mcp.ElicitResult
		wantErr string // in the error the server gets
	}{
		{
			name: "accept, seeing the request",
			handler: `function(req, server)
				assert(req.mode == "form" and req.message == "Who are you?", "request")
				assert(req.requested_schema.properties.age.type == "integer", "schema")
				return {action = "accept", content = {name = server, age = 36}}
			end`,
			params: nameForm(),
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "forms", "age": 36.0}},
		},
		{
			name:    "fields left out take the form's defaults",
			handler: `function() return {action = "accept", content = {name = "Ada"}} end`,
			params: &mcp.ElicitParams{Message: "Settings", RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":     map[string]any{"type": "string", "default": "John Doe"},
					"age":      map[string]any{"type": "integer", "default": 30},
					"status":   map[string]any{"type": "string", "enum": []any{"active", "pending"}, "default": "active"},
					"verified": map[string]any{"type": "boolean", "default": true},
				},
				"required": []any{"name", "age", "status", "verified"},
			}},
			want: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "age": 30.0, "status": "active", "verified": true}},
		},
		{
			name:    "decline drops content",
			handler: `function() return {action = "decline", content = {name = "x"}} end`,
			params:  nameForm(),
			want:    &mcp.ElicitResult{Action: "decline"},
		},
		{
			name:    "cancel",
			handler: `function() return {action = "cancel"} end`,
			params:  nameForm(),
			want:    &mcp.ElicitResult{Action: "cancel"},
		},
		{
			name: "url mode",
			handler: `function(req)
				assert(req.mode == "url" and req.url == "https://example.com/auth" and req.elicitation_id == "e-1", "url request")
				assert(req.requested_schema == nil)
				return {action = "accept"}
			end`,
			params: &mcp.ElicitParams{Mode: "url", Message: "Log in", URL: "https://example.com/auth", ElicitationID: "e-1"},
			want:   &mcp.ElicitResult{Action: "accept"},
		},
		{
			name:    "content checked against the schema",
			handler: `function() return {action = "accept", content = {age = -1}} end`,
			params:  nameForm(),
			wantErr: "the answer does not fit the requested form: $.name: required property is missing",
		},
		{
			// A server's form is untrusted: a reference loop must be refused
			// before the validator follows it into a fatal stack overflow.
			name:    "a form whose schema loops",
			handler: `function() return {action = "accept", content = {a = 1}} end`,
			params:  &mcp.ElicitParams{Message: "?", RequestedSchema: map[string]any{"allOf": []any{map[string]any{"$ref": "#"}}}},
			wantErr: "reference loop that never consumes data",
		},
		{
			name:    "unknown action",
			handler: `function() return {action = "ok"} end`,
			params:  nameForm(),
			wantErr: `action must be "accept", "decline" or "cancel", got ok`,
		},
		{
			name:    "not a table",
			handler: `function() return 42 end`,
			params:  nameForm(),
			wantErr: "it must return {action",
		},
		{
			name:    "nil, err",
			handler: `function() return nil, "not today" end`,
			params:  nameForm(),
			wantErr: "not today",
		},
		{
			name:    "raised error",
			handler: `function() error("kaboom") end`,
			params:  nameForm(),
			wantErr: "kaboom",
		},
		{
			name:    "a loop that never waits is stopped",
			handler: `function() while true do end end`,
			params:  nameForm(),
			wantErr: "stopped after",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, spy := newAskRuntime(t)
			r.run(t, `mcp_handle("elicitation", `+tt.handler+`)`)
			res, err := spy.host(t).Elicit(askCtx(t), from, tt.params)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, tt.want, res)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			require.ErrorContains(t, err, `mcp_handle("elicitation") at test:1, asked by server "forms"`, "the error names the handler")
			var he *luaapi.HandlerError
			require.ErrorAs(t, err, &he)
			require.Equal(t, ask.Elicitation, he.Kind)
			require.NotErrorIs(t, err, ask.ErrNoAnswer, "a failure is not passed on")
		})
	}
}

// A handler's failure reaches the person too, as hook_error with its
// traceback (the server only gets the message).
func TestHandlerFailureIsPublished(t *testing.T) {
	r, spy := newAskRuntime(t)
	r.run(t, "local function boom() error(\"kaboom\") end\nmcp_handle(\"sampling\", function() boom() end)")
	_, err := spy.host(t).CreateMessage(askCtx(t), ask.From{Server: "s"}, &mcp.CreateMessageWithToolsParams{})
	require.ErrorContains(t, err, "kaboom")
	got := r.run(t, `for _, e in ipairs(mcp_events()) do
		if e.kind == "hook_error" then return e.hook, e.server, e.traceback end
	end`)
	require.Len(t, got, 3, "no hook_error event")
	require.Equal(t, []string{`mcp_handle("sampling") at test:2`, "s"}, got[:2])
	require.Contains(t, got[2], "in function 'boom'")
}

func TestHandleSampling(t *testing.T) {
	params := &mcp.CreateMessageWithToolsParams{
		SystemPrompt: "Be brief.",
		MaxTokens:    50,
		Messages: []*mcp.SamplingMessageV2{
			{Role: "user", Content: []mcp.Content{&mcp.TextContent{Text: "What is 6*7?"}}},
			{Role: "assistant", Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}},
		},
		ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: "claude"}}},
	}
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	tests := []struct {
		name    string
		handler string
		want    *mcp.CreateMessageWithToolsResult
		wantErr string
	}{
		{
			name: "the request as a table, a string back",
			handler: `function(req, server)
				local m = req.messages[1]
				assert(m.role == "user" and m.content.type == "text", "first message")
				assert(#req.messages[2].content == 2, "several blocks are a list")
				assert(req.system_prompt == "Be brief." and req.max_tokens == 50, "fields")
				assert(req.model_preferences.hints[1].name == "claude", "preferences")
				return m.content.text .. " asked by " .. server
			end`,
			want: &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "mcpvisor-lua", Content: text("What is 6*7? asked by llm")},
		},
		{
			name:    "a table back",
			handler: `function() return {content = {type = "text", text = "42"}, model = "deep-thought", stop_reason = "endTurn"} end`,
			want:    &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "deep-thought", StopReason: "endTurn", Content: text("42")},
		},
		{
			name:    "content as a string",
			handler: `function() return {content = "42"} end`,
			want:    &mcp.CreateMessageWithToolsResult{Role: "assistant", Model: "mcpvisor-lua", Content: text("42")},
		},
		{
			name:    "an unknown content type",
			handler: `function() return {content = {type = "video"}} end`,
			wantErr: "its answer cannot be sent",
		},
		{
			name:    "no content",
			handler: `function() return {model = "m"} end`,
			wantErr: "content is required",
		},
		{
			name:    "a misspelt field",
			handler: `function() return {content = "x", stopReason = "endTurn"} end`,
			wantErr: "unknown field stopReason",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, spy := newAskRuntime(t)
			r.run(t, `mcp_handle("sampling", `+tt.handler+`)`)
			res, err := spy.host(t).CreateMessage(askCtx(t), ask.From{Server: "llm"}, params)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, res)
		})
	}
}

func TestHandleRoots(t *testing.T) {
	r, spy := newAskRuntime(t)
	a := spy.host(t)
	ctx := askCtx(t)
	_, err := a.ListRoots(ctx, ask.From{Server: "fs"})
	require.ErrorIs(t, err, ask.ErrNoAnswer, "no roots and no handler")

	r.run(t, `mcp_roots{"file:///srv/a", {uri = "file:///srv/b", name = "b"}}`)
	spy.changed(t)
	want := []*mcp.Root{{URI: "file:///srv/a"}, {URI: "file:///srv/b", Name: "b"}}
	roots, err := a.ListRoots(ctx, ask.From{Server: "fs"})
	require.NoError(t, err)
	require.Equal(t, want, roots)

	// A handler overrides the host's roots for the servers it answers,
	// and passes the others on by returning nothing.
	r.run(t, `mcp_handle("roots", function(server)
		if server == "fs" then return {{uri = "file:///home/" .. server, name = "home"}} end
	end)`)
	roots, err = a.ListRoots(ctx, ask.From{Server: "fs"})
	require.NoError(t, err)
	require.Equal(t, []*mcp.Root{{URI: "file:///home/fs", Name: "home"}}, roots)
	roots, err = a.ListRoots(ctx, ask.From{Server: "other"})
	require.NoError(t, err)
	require.Equal(t, want, roots)

	r.run(t, `mcp_handle("roots", function() return {"relative/path"} end)`)
	_, err = a.ListRoots(ctx, ask.From{Server: "fs"})
	require.ErrorContains(t, err, `root 1: "relative/path" is not a file:// URI`)
}

func TestHandlerRemovalAndOffers(t *testing.T) {
	r, spy := newAskRuntime(t)
	a := spy.host(t)
	ctx := askCtx(t)
	require.Equal(t, ask.Kind(0), a.Offers())

	r.run(t, `mcp_handle("elicitation", function() return {action = "cancel"} end)
		mcp_handle("sampling", function() return "x" end)`)
	require.Equal(t, ask.Elicitation|ask.Sampling, a.Offers())
	r.run(t, `mcp_roots{"file:///tmp"}`)
	require.Equal(t, ask.All, a.Offers())

	r.run(t, `mcp_handle("elicitation", nil) mcp_roots{}`)
	require.Equal(t, ask.Sampling, a.Offers())
	_, err := a.Elicit(ctx, ask.From{Server: "s"}, nameForm())
	require.ErrorIs(t, err, ask.ErrNoAnswer)
	_, err = a.ListRoots(ctx, ask.From{Server: "s"})
	require.ErrorIs(t, err, ask.ErrNoAnswer)
	require.Equal(t, "[]", r.one(t, `return json.encode(mcp_roots())`))

	for _, tc := range []struct{ src, want string }{
		{`mcp_handle("completion", print)`, `unknown kind "completion"`},
		{`mcp_handle("roots", "not a function")`, "function expected (function(server))"},
	} {
		require.Contains(t, r.fail(t, tc.src).Message, tc.want, tc.src)
	}
}

// A handler returning nothing passes: the prompter answers. The prompter
// also answers when there is no handler, and makes elicitation offered.
func TestPrompterAnswersWhatLuaDoesNot(t *testing.T) {
	p := &fakePrompter{answer: &mcp.ElicitResult{Action: "decline"}, asked: make(chan ask.From, 4)}
	r, spy := newAskRuntime(t, func(o *luaapi.Options) { o.Prompter = p })
	a := spy.host(t)
	require.Equal(t, ask.Elicitation, a.Offers())
	from := ask.From{Server: "s", Client: "c"}

	res, err := a.Elicit(askCtx(t), from, nameForm())
	require.NoError(t, err)
	require.Equal(t, "decline", res.Action)
	require.Equal(t, from, <-p.asked)

	r.run(t, `mcp_handle("elicitation", function(req, server)
		if server == "mine" then return {action = "accept", content = {name = "lua"}} end
	end)`)
	res, err = a.Elicit(askCtx(t), ask.From{Server: "mine"}, nameForm())
	require.NoError(t, err)
	require.Equal(t, "accept", res.Action)
	require.Empty(t, p.asked, "Lua answered: the prompter was not asked")
	res, err = a.Elicit(askCtx(t), from, nameForm())
	require.NoError(t, err)
	require.Equal(t, "decline", res.Action)
	require.Equal(t, from, <-p.asked)
}

// A handler is bounded by the request: when the server stops waiting, the
// answer is an error at once, the handler is interrupted at its wait, and
// the loop goes on serving chunks and other requests.
func TestHandlerBoundedByTheRequest(t *testing.T) {
	r, spy := newAskRuntime(t)
	a := spy.host(t)
	r.run(t, `finished = false
		mcp_handle("elicitation", function() sleep(0.5) finished = true return {action = "accept"} end)`)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := a.Elicit(ctx, ask.From{Server: "slow"}, nameForm())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, `mcp_handle("elicitation"), asked by server "slow": no answer before the request ended`)
	var he *luaapi.HandlerError
	require.True(t, errors.As(err, &he))
	// Answered before the handler's sleep ended: it never finishes (below).
	require.Equal(t, "false", r.one(t, `return finished`))

	require.Equal(t, "2", r.one(t, `return 1 + 1`), "the loop still runs chunks")
	r.run(t, `mcp_handle("elicitation", function() return {action = "cancel"} end)`)
	res, err := a.Elicit(askCtx(t), ask.From{Server: "slow"}, nameForm())
	require.NoError(t, err)
	require.Equal(t, "cancel", res.Action)
	require.Equal(t, "false", r.one(t, `sleep(1) return finished`), "the interrupted handler never ran on")
}

func TestMcpRoots(t *testing.T) {
	r, spy := newAskRuntime(t)
	require.Equal(t, "[]", r.one(t, `return json.encode(mcp_roots())`))
	r.run(t, `mcp_roots{"file:///home/me/project", {uri = "file://localhost/srv", name = "srv"}}`)
	spy.changed(t)
	require.Equal(t, `[{"uri":"file:///home/me/project"},{"name":"srv","uri":"file://localhost/srv"}]`,
		r.one(t, `return json.encode(mcp_roots())`))
	pokes := luaapi.RootsPokes(r.Runtime)
	r.run(t, `mcp_roots{"file:///home/me/project", {uri = "file://localhost/srv", name = "srv"}}`)
	require.Equal(t, pokes, luaapi.RootsPokes(r.Runtime), "the same roots again are no change")

	for _, tc := range []struct{ src, want string }{
		{`mcp_roots{"/home/me"}`, `"/home/me" is a path; a root is a file:// URI: "file:///home/me"`},
		{`mcp_roots{"https://example.com/x"}`, `"https://example.com/x" is not a file:// URI`},
		{`mcp_roots{"file:relative"}`, `"file:relative" is not an absolute file:// URI`},
		{`mcp_roots{"file://server/share"}`, `names the host "server"`},
		{`mcp_roots{"file:///a?x=1"}`, "has a query or fragment"},
		{`mcp_roots{{name = "n"}}`, "root 1: uri is required"},
		{`mcp_roots{{uri = "file:///a", path = "/a"}}`, "root 1: unknown field path"},
		{`mcp_roots{"file:///a", "file:///a"}`, `root 2: "file:///a" is given twice`},
		{`mcp_roots{uri = "file:///a"}`, "roots must be a list"},
		{`mcp_roots("file:///a")`, "a list of roots expected"},
		{`mcp_roots{42}`, "root 1: a URI string or {uri = …, name = …} expected, got number"},
	} {
		require.Contains(t, r.fail(t, tc.src).Message, tc.want, tc.src)
	}
	require.Equal(t, pokes, luaapi.RootsPokes(r.Runtime), "refused roots are no change")
	require.Equal(t, "2", r.one(t, `return #mcp_roots()`), "a refused list changes nothing")
}

// Handlers and roots set in the config are part of it: a reload replaces
// them, and one that no longer sets them takes them away; what was set at
// the REPL stays unless the config sets the same. A broken reload changes
// nothing.
func TestHandlersAndRootsFollowTheConfig(t *testing.T) {
	r, spy := newAskRuntime(t)
	a := spy.host(t)
	path := filepath.Join(t.TempDir(), "startup.lua")
	load := func(src string) error {
		_, err := r.LoadConfigSource(askCtx(t), path, src)
		return err
	}
	sample := func() string {
		res, err := a.CreateMessage(askCtx(t), ask.From{Server: "s"}, &mcp.CreateMessageWithToolsParams{})
		if err != nil {
			return err.Error()
		}
		return res.Content[0].(*mcp.TextContent).Text
	}

	require.NoError(t, load(`mcp_roots{"file:///one"}
		mcp_handle("sampling", function() return "v1" end)`))
	spy.changed(t)
	require.Equal(t, "v1", sample())
	require.Equal(t, "file:///one", r.one(t, `return mcp_roots()[1].uri`))

	require.NoError(t, load(`mcp_roots{"file:///two"}
		mcp_handle("sampling", function() return "v2" end)`))
	spy.changed(t)
	require.Equal(t, "v2", sample())
	require.Equal(t, "file:///two", r.one(t, `return mcp_roots()[1].uri`))

	pokes := luaapi.RootsPokes(r.Runtime)
	require.Error(t, load(`mcp_roots{"file:///three"} error("broken")`))
	require.Equal(t, "v2", sample())
	require.Equal(t, "file:///two", r.one(t, `return mcp_roots()[1].uri`))
	require.Equal(t, pokes, luaapi.RootsPokes(r.Runtime), "a broken config changes no roots")

	require.NoError(t, load(`-- nothing`))
	spy.changed(t)
	require.Equal(t, ask.Kind(0), a.Offers())
	require.Equal(t, "0", r.one(t, `return #mcp_roots()`))

	// Set at the REPL: kept by a config that does not set them.
	r.run(t, `mcp_roots{"file:///repl"} mcp_handle("sampling", function() return "repl" end)`)
	spy.changed(t)
	require.NoError(t, load(`-- still nothing`))
	require.Equal(t, "repl", sample())
	require.Equal(t, "file:///repl", r.one(t, `return mcp_roots()[1].uri`))

	for _, tc := range []struct{ src, want string }{
		{"mcp_roots{\"file:///a\"}\nmcp_roots{\"file:///b\"}", "mcp_roots is set twice in startup.lua (first at startup.lua:1)"},
		{"mcp_handle(\"roots\", print)\nmcp_handle(\"roots\", nil)", `mcp_handle("roots") is set twice`},
		{`mcp_roots{"c:/x"}`, `is not a file:// URI`},
	} {
		require.ErrorContains(t, load(tc.src), tc.want, tc.src)
	}
}
