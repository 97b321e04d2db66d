package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
	"github.com/mcpvisor/mcpvisor/manager"
)

// maxDescribe bounds the tools one describe_tools call describes.
const maxDescribe = 20

// modes offers a client in search or code mode its meta-tools instead of
// the catalogue: it answers tools/list, and the calls of the meta-tools,
// itself; every other request, and the calls of the tools themselves,
// go on down the chain. A tool called through call_tool or run_lua is
// sent down the same chain as a direct call, so it is named, validated,
// limited, routed and reported exactly as one.
func (ep *endpoint) modes(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" && method != "tools/call" {
			return next(ctx, method, req)
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || ss.InitializeParams() == nil {
			return next(ctx, method, req)
		}
		s := ep.g.clients.session(ep, ss)
		mode := ep.g.modeOf(ep, s)
		if mode == ModeDirect {
			return next(ctx, method, req)
		}
		if method == "tools/list" {
			return ep.listMeta(ctx, next, ss, s, mode)
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		prefix := ep.g.opts.MetaPrefix
		switch {
		case mode == ModeSearch && call.Params.Name == prefix+toolsearch.SearchToolName:
			return ep.searchTools(ctx, call, s), nil
		case mode == ModeSearch && call.Params.Name == prefix+toolsearch.DescribeToolName:
			return ep.describeTools(ctx, next, call, s), nil
		case mode == ModeSearch && call.Params.Name == prefix+toolsearch.CallToolName:
			return ep.callTool(ctx, next, call)
		case mode == ModeCode && call.Params.Name == prefix+RunLuaName:
			return ep.runLua(ctx, next, call, s)
		}
		// A tool called by its own name (a pinned one, or one the client
		// remembers) is called as in direct mode.
		return next(ctx, method, req)
	}
}

// listMeta is the tools/list of a client in search or code mode: the
// meta-tools, and in search mode the pinned tools and the status tool,
// named as the client's direct list names them.
func (ep *endpoint) listMeta(ctx context.Context, next mcp.MethodHandler, ss *mcp.ServerSession, s *session, mode Mode) (mcp.Result, error) {
	rt := ep.routes.Load()
	prefix := ep.g.opts.MetaPrefix
	if mode == ModeCode {
		return metaList([]*mcp.Tool{RunLuaTool(prefix, rt.servers())}), nil
	}
	tools := toolsearch.MetaTools(prefix, rt.servers())
	if len(rt.pinned) == 0 && !(ep.sel == everything && ep.g.opts.StatusTool) {
		return metaList(tools), nil
	}
	all, err := ep.listAll(ctx, next, ss)
	if err != nil {
		return nil, err
	}
	n := ep.naming(s)
	for _, t := range all {
		if rt.pinned[n.toOwn(t.Name)] || ep.sel == everything && t.Name == StatusTool {
			tools = append(tools, t)
		}
	}
	return metaList(tools), nil
}

// metaList is a tools/list result of a client in search or code mode.
// Built here rather than by the SDK, it must fill the cache fields the
// SDK fills for the lists it builds: clients of the newer protocol
// reject a cacheScope that is neither "public" nor "private", and an
// empty one is neither. The list depends on the client's mode, so it is
// the client's own ("private") and stale at once (ttlMs 0).
func metaList(tools []*mcp.Tool) *mcp.ListToolsResult {
	return &mcp.ListToolsResult{Tools: tools, Cacheable: mcp.Cacheable{CacheScope: "private"}}
}

// listAll is the endpoint's whole direct list as the client would get it,
// every page.
func (ep *endpoint) listAll(ctx context.Context, next mcp.MethodHandler, ss *mcp.ServerSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	cursor := ""
	for range 1000 {
		res, err := next(ctx, "tools/list", &mcp.ListToolsRequest{Session: ss, Params: &mcp.ListToolsParams{Cursor: cursor}})
		if err != nil {
			return nil, err
		}
		lr, ok := res.(*mcp.ListToolsResult)
		if !ok {
			break
		}
		out = append(out, lr.Tools...)
		if cursor = lr.NextCursor; cursor == "" {
			break
		}
	}
	return out, nil
}

// searchTools answers search_tools: the best matches among the tools the
// endpoint lists, named as the client calls them.
func (ep *endpoint) searchTools(ctx context.Context, call *mcp.CallToolRequest, s *session) *mcp.CallToolResult {
	name := call.Params.Name
	var a toolsearch.SearchArgs
	if bad := metaArgs(name, call.Params.Arguments, &a); bad != nil {
		return bad
	}
	ep.settled(ctx)
	hits, err := ep.search(a.Query, a.Limit, a.Server, s)
	if errors.Is(err, ErrClosed) {
		return errorResult(name + ": " + ErrShuttingDown.Error())
	}
	if err != nil {
		return errorResult(fmt.Sprintf("%s: %s: %v. Give a few words saying what the tool should do.", manager.CodeInvalidArguments, name, err))
	}
	if len(hits) == 0 {
		servers := ep.routes.Load().servers()
		return textResult(fmt.Sprintf("No tool matches %q. The servers are: %s. Try other words, or give only server to list a server's tools.",
			a.Query, strings.Join(servers, ", ")))
	}
	lines := make([]string, len(hits))
	for i, h := range hits {
		lines[i] = matchLine(h.Name, h.Server, h.Description, h.Why)
	}
	return textResult(strings.Join(lines, "\n") + "\nCall describe_tools for their input schemas, then call_tool.")
}

// search finds the endpoint's tools for a client: never one the endpoint
// does not list.
func (ep *endpoint) search(query string, limit int, server string, s *session) ([]CodeHit, error) {
	x := ep.searchIndex()
	if x == nil {
		return nil, ErrClosed
	}
	rt := ep.routes.Load()
	found, err := x.Search(query, toolsearch.Options{Limit: limit, Server: server, Allow: func(name string) bool {
		_, ok := rt.tools[name]
		return ok
	}})
	if err != nil {
		return nil, err
	}
	n := ep.naming(s)
	out := make([]CodeHit, len(found))
	for i, m := range found {
		out[i] = CodeHit{Name: n.toClient(m.Name), Server: m.Server, Description: m.Description, Why: whyText(m.Why)}
	}
	return out, nil
}

// describeTools answers describe_tools: the named tools' definitions as
// the client's direct list has them.
func (ep *endpoint) describeTools(ctx context.Context, next mcp.MethodHandler, call *mcp.CallToolRequest, s *session) *mcp.CallToolResult {
	name := call.Params.Name
	var a toolsearch.DescribeArgs
	if bad := metaArgs(name, call.Params.Arguments, &a); bad != nil {
		return bad
	}
	if len(a.Names) == 0 {
		return errorResult(fmt.Sprintf("%s: %s: names is required: the names search_tools gave.", manager.CodeInvalidArguments, name))
	}
	if len(a.Names) > maxDescribe {
		return errorResult(fmt.Sprintf("%s: %s: at most %d names at once, got %d.", manager.CodeInvalidArguments, name, maxDescribe, len(a.Names)))
	}
	ep.settled(ctx)
	all, err := ep.listAll(ctx, next, call.Session)
	if err != nil {
		return errorResult(name + ": " + err.Error())
	}
	byName := make(map[string]*mcp.Tool, len(all))
	for _, t := range all {
		byName[t.Name] = t
	}
	var found []*mcp.Tool
	var missing []string
	for _, want := range a.Names {
		if t, ok := byName[want]; ok && !isMeta(want, ep.g.opts.MetaPrefix) {
			found = append(found, t)
		} else {
			missing = append(missing, want)
		}
	}
	var b bytes.Buffer
	if len(found) > 0 {
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(found)
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, "No tool named %s here; search_tools finds tools by what they do.", quoteAll(missing))
	}
	return &mcp.CallToolResult{IsError: len(found) == 0, Content: []mcp.Content{&mcp.TextContent{Text: strings.TrimSpace(b.String())}}}
}

// callTool answers call_tool: the named tool called as a direct call of
// it would be.
func (ep *endpoint) callTool(ctx context.Context, next mcp.MethodHandler, call *mcp.CallToolRequest) (mcp.Result, error) {
	var a struct {
		Name      string `json:"name"`
		Arguments any    `json:"arguments"`
	}
	meta := call.Params.Name
	if bad := metaArgs(meta, call.Params.Arguments, &a); bad != nil {
		return bad, nil
	}
	if a.Name == "" {
		return errorResult(fmt.Sprintf("%s: %s: name is required: a tool's name as search_tools gave it.", manager.CodeInvalidArguments, meta)), nil
	}
	if isMeta(a.Name, ep.g.opts.MetaPrefix) {
		return errorResult(fmt.Sprintf("%s: %s: %q is one of the meta-tools; call it directly.", manager.CodeInvalidArguments, meta, a.Name)), nil
	}
	var args map[string]any
	switch v := a.Arguments.(type) {
	case nil:
	case map[string]any:
		args = v
	default:
		return errorResult(fmt.Sprintf("%s: %s %q: arguments must be a JSON object of the tool's named arguments, got %T. Retrying with the same arguments will not help.",
			manager.CodeInvalidArguments, meta, a.Name, v)), nil
	}
	res, err := ep.callThrough(ctx, next, call, a.Name, args, true)
	var unknown *UnknownToolError
	if errors.As(err, &unknown) {
		return errorResult(errorText(err)), nil
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// callThrough calls the tool a client names name with args, as a direct
// call of it: down the rest of the chain, on the client's session, with
// the progress token and trace context of outer, the request that asked
// for it. A name the endpoint does not serve is an *UnknownToolError.
func (ep *endpoint) callThrough(ctx context.Context, next mcp.MethodHandler, outer *mcp.CallToolRequest, name string, args map[string]any, again bool) (*mcp.CallToolResult, error) {
	var raw json.RawMessage
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("tools/call %q: the arguments cannot be sent as JSON: %w", name, err)
		}
		raw = b
	}
	p := &mcp.CallToolParamsRaw{Meta: outer.Params.Meta, Name: name, Arguments: raw}
	if again {
		// A client answering what the tool's server asked calls again
		// with the state of the call it answers.
		p.RequestState, p.InputResponses = outer.Params.RequestState, outer.Params.InputResponses
	}
	res, err := next(ctx, "tools/call", &mcp.CallToolRequest{Session: outer.Session, Params: p, Extra: outer.Extra})
	if err != nil {
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == jsonrpc.CodeInvalidParams {
			return nil, &UnknownToolError{Tool: name, Endpoint: ep.path}
		}
		return nil, err
	}
	r, ok := res.(*mcp.CallToolResult)
	if !ok || r == nil {
		return &mcp.CallToolResult{Content: []mcp.Content{}}, nil
	}
	return r, nil
}

// UnknownToolError is a call, through call_tool or run_lua, of a tool the
// client's endpoint does not serve (or hides from it).
type UnknownToolError struct {
	Tool     string
	Endpoint string
}

func (e *UnknownToolError) Error() string {
	return fmt.Sprintf("UNKNOWN_TOOL: no tool %q on %s for this client; search_tools finds tools by what they do", e.Tool, e.Endpoint)
}

// metaArgs reads a meta-tool's arguments into dst, or returns the isError
// result that says what is wrong with them.
func metaArgs(tool string, raw json.RawMessage, dst any) *mcp.CallToolResult {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		what := "the arguments are not a JSON object"
		if errors.As(err, &te) && te.Field != "" {
			what = fmt.Sprintf("%s must be a JSON %s", te.Field, jsonKind(te.Type.Kind().String()))
		}
		return errorResult(fmt.Sprintf("%s: %s: %s. Retrying with the same arguments will not help.", manager.CodeInvalidArguments, tool, what))
	}
	return nil
}

// jsonKind names a Go kind as JSON does.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "slice", "array":
		return "array"
	case "map", "struct":
		return "object"
	case "bool":
		return "boolean"
	}
	return "number"
}

// isMeta reports whether name is one of the meta-tools.
func isMeta(name, prefix string) bool {
	switch strings.TrimPrefix(name, prefix) {
	case toolsearch.SearchToolName, toolsearch.DescribeToolName, toolsearch.CallToolName, RunLuaName:
		return strings.HasPrefix(name, prefix)
	}
	return false
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
