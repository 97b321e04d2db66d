package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/mcpvisor/mcpvisor/manager"
)

// toolHandler forwards calls of one exposed tool to its server.
func (g *Gateway) toolHandler(server, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return g.forward(ctx, req, server, tool), nil
	}
}

// forward calls server's tool for a client. Whatever goes wrong on the way
// (the server down, its circuit open, a timeout, arguments its schema
// rejects) comes back as an isError result whose text names the server
// and the operation: the model reads it, and no request ever hangs past
// the call's timeout.
func (g *Gateway) forward(ctx context.Context, req *mcp.CallToolRequest, server, tool string) *mcp.CallToolResult {
	var args map[string]any
	if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return errorResult(fmt.Sprintf("server %q: tools/call %q: arguments must be a JSON object: %v", server, tool, err))
		}
	}
	ctx = traceContext(ctx, req.Params.Meta)
	opts := manager.CallOptions{FailFast: true, Client: g.clients.label(req.Session)}
	var fw *progressForwarder
	if token := req.Params.GetProgressToken(); token != nil && req.Session != nil {
		fw = newProgressForwarder(ctx, req.Session, token)
		opts.Progress = fw.send
	}
	res, err := g.src.Call(ctx, server+"."+tool, args, opts)
	if fw != nil {
		fw.finish() // the progress it has goes out before the result
	}
	if err != nil {
		return errorResult(err.Error())
	}
	return res
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// traceContext continues the client's W3C trace context, sent in the
// request's _meta, so that mcpvisor's span and the upstream call join the
// client's trace.
func traceContext(ctx context.Context, meta mcp.Meta) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	carrier := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := meta[k].(string); ok {
			carrier[k] = v
		}
	}
	if len(carrier) == 0 {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

func (g *Gateway) promptHandler(server, prompt string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		res, err := g.src.GetPrompt(ctx, server+"."+prompt, req.Params.Arguments, 0)
		if err != nil {
			return nil, rpcError(err)
		}
		return res, nil
	}
}

func (g *Gateway) resourceHandler(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		res, err := g.src.ReadResource(ctx, req.Params.URI, server, 0)
		if err != nil {
			return nil, rpcError(err)
		}
		return res, nil
	}
}

// rpcError is what a client gets for a failed prompt or resource request:
// the server's own JSON-RPC error (its code kept, so "resource not found"
// stays that), else an internal error whose message names the server and
// the operation.
func rpcError(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return &jsonrpc.Error{Code: je.Code, Message: err.Error(), Data: je.Data}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// unknownTools answers a call of a tool the endpoint does not list (yet):
// a server that has not connected has no tools to list, and a client that
// calls one anyway gets the server's own answer, "not connected: …, the
// next attempt is in …", rather than the SDK's bare "unknown tool".
func (ep *endpoint) unknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		if _, listed := ep.routes.Load().tools[call.Params.Name]; listed {
			return next(ctx, method, req)
		}
		server, tool, ok := ep.route(call.Params.Name)
		if !ok {
			return next(ctx, method, req)
		}
		return ep.g.forward(ctx, call, server, tool), nil
	}
}

// route finds the server an unlisted tool name points at: on a server's
// endpoint, that server; on /mcp, the server whose prefix starts the name.
func (ep *endpoint) route(name string) (server, tool string, ok bool) {
	switch ep.sel {
	case oneServer:
		return ep.name, name, true
	case everything:
		prefix, tool, found := strings.Cut(name, "__")
		if !found {
			return "", "", false
		}
		server, ok := ep.g.currentView().serverOfPrefix(prefix)
		return server, tool, ok
	}
	return "", "", false
}
