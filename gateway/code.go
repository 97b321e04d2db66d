package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager"
)

// RunLuaName is the name of the one tool a client in code mode is
// offered, before any prefix (Options.MetaPrefix).
const RunLuaName = "run_lua"

// CodeEnv is what a Lua chunk run for a client in code mode may use: the
// client's tools, and calls and searches of them as the client's own.
type CodeEnv struct {
	// Tools are the tools the client's endpoint serves it, by name.
	Tools []CodeTool
	// Call calls a tool, named as in Tools, with args, as a direct call
	// by the client would: validated, limited to what its endpoint
	// serves it, on its own upstream session, with events, its progress
	// going to the client and cancelled with ctx (pass the run's). A
	// tool that fails answers with an isError result, not an error; the
	// error is for a call that could not be made (*UnknownToolError, the
	// client gone).
	Call func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error)
	// Search finds tools by what they do, best first (limit 0: 10); an
	// empty query lists server's tools, and none without a server.
	Search func(query string, limit int, server string) []CodeHit
}

// CodeTool is one tool a chunk may call.
type CodeTool struct {
	// Name is the tool's name on the client's endpoint, what Call takes.
	Name string
	// Server is the name of the server that offers it, and Tool the
	// server's own name for it (tools.SERVER.TOOL in Lua).
	Server, Tool string
	// Description is what the client would be shown (the user's override
	// if there is one).
	Description string
	// InputSchema is the tool's JSON schema for its arguments.
	InputSchema json.RawMessage
}

// CodeHit is a tool a search found, and why.
type CodeHit struct {
	Name, Server, Description string
	// Why says which words of the query matched where.
	Why string
}

// RunLuaTool is the definition of run_lua (named prefix+"run_lua"), whose
// description names servers, so that a model knows what there is before
// it looks.
func RunLuaTool(prefix string, servers []string) *mcp.Tool {
	desc := "Run a Lua chunk that uses tools. Every tool is a function: tools.SERVER.TOOL{arg = value} " +
		"returns the tool's structured result or its text, and raises an error when the tool fails. " +
		"search_tools(query [, limit, server]) finds tools by what they do; describe(name) gives a tool's input schema. " +
		"What the chunk prints and returns comes back. Calls made in the chunk are ordinary calls of this client's tools; " +
		"io, os and require are not there, and runs are limited in time, memory and calls."
	if len(servers) > 0 {
		desc += " Servers: " + strings.Join(servers, ", ") + "."
	}
	return &mcp.Tool{
		Name:        prefix + RunLuaName,
		Description: desc,
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"code": map[string]any{"type": "string", "description": "The Lua chunk to run."},
			},
			"required": []any{"code"},
		},
	}
}

// runLua answers run_lua: the chunk runs (Options.Code) with the client's
// tools, ended when the client cancels the call or leaves.
func (ep *endpoint) runLua(ctx context.Context, next mcp.MethodHandler, call *mcp.CallToolRequest, s *session) (mcp.Result, error) {
	name := call.Params.Name
	var a struct {
		Code string `json:"code"`
	}
	if bad := metaArgs(name, call.Params.Arguments, &a); bad != nil {
		return bad, nil
	}
	if strings.TrimSpace(a.Code) == "" {
		return errorResult(fmt.Sprintf("%s: %s: code is required: a Lua chunk.", manager.CodeInvalidArguments, name)), nil
	}
	run := ep.g.opts.Code
	if run == nil { // refused when the mode is chosen; kept safe anyway
		return errorResult(name + ": " + (&ModeError{Code: CodeNoCodeRunner, Mode: string(ModeCode)}).Error()), nil
	}
	ep.settled(ctx)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(s.ctx, func() { cancel(context.Cause(s.ctx)) })()
	res, err := run(ctx, a.Code, ep.codeEnv(next, call, s))
	if cause := context.Cause(s.ctx); cause != nil && !errors.Is(cause, ErrShuttingDown) {
		return nil, &jsonrpc.Error{Code: CodeRefused, Message: name + ": " + cause.Error() + "; the run was stopped"}
	}
	if err != nil {
		return errorResult(name + ": " + errorText(err)), nil
	}
	if res == nil {
		res = &mcp.CallToolResult{Content: []mcp.Content{}}
	}
	return res, nil
}

// codeEnv is what a chunk run for s's client may use.
func (ep *endpoint) codeEnv(next mcp.MethodHandler, outer *mcp.CallToolRequest, s *session) CodeEnv {
	rt := ep.routes.Load()
	n := ep.naming(s)
	tools := make([]CodeTool, 0, len(rt.tools))
	for _, own := range slices.Sorted(maps.Keys(rt.tools)) {
		r := rt.tools[own]
		schema, _ := json.Marshal(objectSchema(r.from.InputSchema))
		tools = append(tools, CodeTool{Name: n.toClient(own), Server: r.server, Tool: r.tool,
			Description: r.from.Description, InputSchema: schema})
	}
	return CodeEnv{
		Tools: tools,
		Call: func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
			if isMeta(name, ep.g.opts.MetaPrefix) {
				return nil, &UnknownToolError{Tool: name, Endpoint: ep.path}
			}
			return ep.callThrough(ctx, next, outer, name, args, false)
		},
		Search: func(query string, limit int, server string) []CodeHit {
			hits, _ := ep.search(query, limit, server, s)
			return hits
		},
	}
}
