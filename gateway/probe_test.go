package gateway_test

// A go-sdk client that runs a fixed script of operations against a server
// and describes what it observed, in words that do not depend on whether
// it talked to the server directly or through the gateway: the names the
// gateway adds (a server's prefix on /mcp and on toolsets, the server's
// name in a log message's logger) are taken off.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// probe is one client session and what it was asked.
type probe struct {
	t      *testing.T
	cs     *mcp.ClientSession
	w      *wire
	server string // the server's name at the gateway, as in a logger
	prefix string // what the endpoint puts before the server's names
	level  string // the logging level the client set
	// sessionless is set for a client of 2026-07-28 over streamable
	// HTTP: it has no session whose level logging/setLevel could set.
	sessionless bool

	mu sync.Mutex
	// mu guards asked.
	asked []string
}

// connectProbe connects a go-sdk client of protocol version to tr, which
// records what it reads in w.
func connectProbe(t *testing.T, tr mcp.Transport, w *wire, version, server, prefix string) *probe {
	t.Helper()
	p := &probe{t: t, w: w, server: server, prefix: prefix}
	_, overHTTP := tr.(*mcp.StreamableClientTransport)
	c := mcp.NewClient(&mcp.Implementation{Name: "same-as-direct", Version: "1"}, &mcp.ClientOptions{
		// A 2026-07-28 client answers the input requests of a result
		// with this handler; a 2025-11-25 one with the middleware below.
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return p.elicited(req.Params)
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			var texts []string
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					texts = append(texts, tc.Text)
				}
			}
			p.ask(fmt.Sprintf("sampling %q", texts))
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "Paris"}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///home/ada/project", Name: "project"})
	// The go-sdk client refuses some valid forms before its handler runs:
	// this one takes the form as it came and fills it in.
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			r, ok := req.(*mcp.ElicitRequest)
			if !ok {
				return next(ctx, method, req)
			}
			return p.elicited(r.Params)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err, "connect")
	t.Cleanup(func() { _ = cs.Close() })
	p.cs = cs
	// A server that keeps sessions answers a client asking for
	// 2026-07-28 in 2025-11-25, with a session whose level it sets.
	p.sessionless = overHTTP && cs.InitializeResult().ProtocolVersion >= "2026-07-28"
	return p
}

// elicited notes a form and fills it in.
func (p *probe) elicited(params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	raw, err := json.Marshal(params.RequestedSchema)
	if err != nil {
		return nil, err
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, err
	}
	return &mcp.ElicitResult{Action: "accept", Content: fillForm(schema)}, nil
}

func (p *probe) ask(what string) {
	p.mu.Lock()
	p.asked = append(p.asked, what)
	p.mu.Unlock()
}

// questions returns what the client was asked since it last looked.
func (p *probe) questions() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.asked
	p.asked = nil
	return out
}

// fillForm answers a form: each field's default, else its first choice,
// else a value of its type.
func fillForm(schema map[string]any) map[string]any {
	props, _ := schema["properties"].(map[string]any)
	out := map[string]any{}
	for name, s := range props {
		s, _ := s.(map[string]any)
		out[name] = fieldValue(s)
	}
	return out
}

func fieldValue(s map[string]any) any {
	if d, ok := s["default"]; ok {
		return d
	}
	if c := firstChoice(s); c != nil {
		return c
	}
	switch s["type"] {
	case "array":
		items, _ := s["items"].(map[string]any)
		return []any{fieldValue(items)}
	case "boolean":
		return true
	case "integer", "number":
		if m, ok := s["minimum"]; ok {
			return m
		}
		return 1
	}
	switch s["format"] {
	case "email":
		return "ada@example.com"
	case "uri":
		return "https://example.com"
	case "date":
		return "2000-01-01"
	case "date-time":
		return "2000-01-01T00:00:00Z"
	}
	return "Ada"
}

func firstChoice(s map[string]any) any {
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			if a, ok := alts[0].(map[string]any); ok {
				return a["const"]
			}
		}
	}
	return nil
}

// names lists what the endpoint offers of the server, without prefix.
func (p *probe) names(all []string) []string { return unprefixed(p.prefix, all) }

// unprefixed keeps of names those with prefix, without it, sorted.
func unprefixed(prefix string, names []string) []string {
	var out []string
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, prefix); ok {
			out = append(out, rest)
		}
	}
	sort.Strings(out)
	return out
}

func (p *probe) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// do does a and describes what the client observed.
func (p *probe) do(a action) []string {
	switch a.Op {
	case "tools":
		return p.tools()
	case "catalogue":
		return p.catalogue()
	case "call":
		return p.call(a.Tool, a.Args, a.Token)
	case "complete":
		return p.complete(a.Prompt, a.Arg, a.Value)
	case "setLevel":
		return p.setLevel(a.Level)
	case "cancel":
		return p.cancelled(a.Tool, a.Args, a.After, a.AfterArgs)
	}
	p.t.Fatalf("unknown action %q", a.Op)
	return nil
}

// tools describes the tool list.
func (p *probe) tools() []string {
	ctx, cancel := p.ctx()
	defer cancel()
	var all []string
	for tool, err := range p.cs.Tools(ctx, nil) {
		if err != nil {
			return []string{"tools/list: " + errText(err)}
		}
		all = append(all, tool.Name)
	}
	return []string{"tools " + strings.Join(p.names(all), " ")}
}

// catalogue describes the prompts, resources and resource templates.
func (p *probe) catalogue() []string {
	ctx, cancel := p.ctx()
	defer cancel()
	var prompts, resources, templates []string
	for pr, err := range p.cs.Prompts(ctx, nil) {
		if err != nil {
			return []string{"prompts/list: " + errText(err)}
		}
		prompts = append(prompts, pr.Name)
	}
	for r, err := range p.cs.Resources(ctx, nil) {
		if err != nil {
			return []string{"resources/list: " + errText(err)}
		}
		if p.server != "" && strings.HasPrefix(r.URI, gateway.StatusURI) {
			continue // the gateway's own
		}
		resources = append(resources, r.URI)
	}
	for r, err := range p.cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			return []string{"resources/templates/list: " + errText(err)}
		}
		templates = append(templates, r.URITemplate)
	}
	sort.Strings(resources)
	sort.Strings(templates)
	return []string{"prompts " + strings.Join(p.names(prompts), " "),
		"resources " + strings.Join(resources, " "), "templates " + strings.Join(templates, " ")}
}

// complete describes the completion of a prompt's argument.
func (p *probe) complete(prompt, arg, value string) []string {
	ctx, cancel := p.ctx()
	defer cancel()
	res, err := p.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: p.prefix + prompt},
		Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
	if err != nil {
		return []string{"complete: " + errText(err)}
	}
	return []string{fmt.Sprintf("complete %q", res.Completion.Values)}
}

// setLevel sets the client's logging level. A sessionless client has no
// session to set it on (a go-sdk server over HTTP refuses the go-sdk
// client's logging/setLevel there, which carries no _meta, with -32602):
// it says the level in the _meta of each call instead.
func (p *probe) setLevel(level string) []string {
	if p.sessionless {
		p.level = level
		return []string{"level " + level}
	}
	ctx, cancel := p.ctx()
	defer cancel()
	if err := p.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		return []string{"logging/setLevel: " + errText(err)}
	}
	p.level = level
	return []string{"level " + level}
}

// call describes a tool call: what came on the wire before its result, in
// order, what the client was asked, and the result.
func (p *probe) call(tool string, args map[string]any, token string) []string {
	ctx, cancel := p.ctx()
	defer cancel()
	if args == nil {
		args = map[string]any{} // the TypeScript SDK's servers refuse null
	}
	params := &mcp.CallToolParams{Name: p.prefix + tool, Arguments: args}
	if token != "" {
		params.SetProgressToken(token)
	}
	if p.level != "" && p.cs.InitializeResult().ProtocolVersion >= "2026-07-28" {
		// On 2026-07-28 a request carries the level its log messages
		// are wanted at.
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[mcp.MetaKeyLogLevel] = p.level
	}
	mark := p.w.mark()
	res, err := p.cs.CallTool(ctx, params)
	out := p.w.since(mark, p.server)
	out = append(out, p.questions()...)
	if err != nil {
		return append(out, "error "+errText(err))
	}
	return append(out, fmt.Sprintf("result isError=%v %s", res.IsError, strings.ReplaceAll(text(res), p.prefix, "")))
}

// cancelled describes a call cancelled once its first progress came, and
// whether the session answers afterwards.
func (p *probe) cancelled(tool string, args map[string]any, after string, afterArgs map[string]any) []string {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := &mcp.CallToolParams{Name: p.prefix + tool, Arguments: args}
	params.SetProgressToken("cancel-me")
	mark := p.w.mark()
	got := make(chan error, 1)
	go func() {
		_, err := p.cs.CallTool(ctx, params)
		got <- err
	}()
	require.Eventually(p.t, func() bool {
		p.w.mu.Lock()
		defer p.w.mu.Unlock()
		return slices.ContainsFunc(p.w.msgs[mark:], func(m map[string]any) bool { return m["method"] == "notifications/progress" })
	}, 20*time.Second, 10*time.Millisecond, "the slow call's first progress")
	cancel()
	var out []string
	select {
	case err := <-got:
		out = append(out, fmt.Sprintf("cancelled: %v", errors.Is(err, context.Canceled)))
	case <-time.After(20 * time.Second):
		return []string{"the cancelled call did not return"}
	}
	return append(out, p.call(after, afterArgs, "")...)
}

// errText is an error as a client tells it apart: its JSON-RPC code, not
// its words (the gateway names the server in them).
func errText(err error) string {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return fmt.Sprintf("code %d", rpc.Code)
	}
	return err.Error()
}
