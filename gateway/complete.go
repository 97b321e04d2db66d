package gateway

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client's completion/complete goes to the server that owns what it
// names: a prompt by the name the client lists it under (on /mcp,
// server__prompt, sent upstream under the server's own name), a resource
// template by its URI template (templates keep their URIs; on /mcp one
// that two servers list is the first's, by name, as in the list). It is
// routed as a call is: counted among the client's requests, cancelled
// when the client leaves, and on a per-client server answered by the
// client's own session. A toolset's endpoint serves neither prompts nor
// resources, so it offers no completions.

// complete forwards a client's completion/complete.
func (ep *endpoint) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	server, own, err := ep.completionTarget(req.Params.Ref)
	if err != nil {
		return nil, err
	}
	ref := *req.Params.Ref
	if ref.Type == "ref/prompt" {
		ref.Name = own
	}
	// The client's _meta (its progress token, say) means nothing upstream.
	params := &mcp.CompleteParams{Argument: req.Params.Argument, Context: req.Params.Context, Ref: &ref}
	var client string
	if req.Session != nil {
		client = ep.g.clients.session(ep, req.Session).label
	}
	var res *mcp.CompleteResult
	err = ep.upstream(ctx, req.Session, req.Extra, func(ctx context.Context) (err error) {
		res, err = ep.g.src.Complete(ctx, server, client, params, 0)
		return err
	})
	if err != nil {
		return nil, rpcError(err)
	}
	return res, nil
}

// completionTarget finds the server that owns what ref names and, for a
// prompt, the server's own name for it. On a server's own endpoint that
// is the server, whatever it lists: it answers for itself.
func (ep *endpoint) completionTarget(ref *mcp.CompleteReference) (server, name string, err error) {
	v := ep.g.currentView()
	switch ref.Type {
	case "ref/prompt":
		switch ep.sel {
		case oneServer:
			return ep.name, ref.Name, nil
		case everything:
			if k, ok := v.own.promptKey[ref.Name]; ok {
				return k.server, k.name, nil
			}
		}
		return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("completion/complete of prompt %q: %s lists no prompt of that name", ref.Name, ep.path)}
	case "ref/resource":
		if ep.sel == oneServer {
			return ep.name, "", nil
		}
		for _, r := range v.resources { // by server: the first lister keeps a shared URI
			if r.Template && r.URI == ref.URI {
				return r.Server, "", nil
			}
		}
		return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("completion/complete of resource template %q: %s lists no resource template of that URI", ref.URI, ep.path)}
	}
	return "", "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
		Message: fmt.Sprintf("completion/complete: unknown reference type %q (want ref/prompt or ref/resource)", ref.Type)}
}

// completions keeps the completions capability out of what initialize
// answers when no server the endpoint serves can complete: a server known
// to have connected without declaring it cannot, one not heard from yet
// may (its lists, too, are announced before they are known).
func (ep *endpoint) completions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "initialize" || err != nil {
			return res, err
		}
		// The SDK makes a fresh copy of the capabilities for each answer.
		if ir, ok := res.(*mcp.InitializeResult); ok && ir.Capabilities != nil && !ep.mayComplete() {
			ir.Capabilities.Completions = nil
		}
		return res, err
	}
}

// mayComplete reports whether a server the endpoint serves declared
// completions, or has not been seen to decline them.
func (ep *endpoint) mayComplete() bool {
	servers := []string{ep.name}
	if ep.sel == everything {
		servers = ep.g.src.Names()
	}
	for _, name := range servers {
		st, err := ep.g.src.Status(name)
		if err != nil {
			continue
		}
		if st.Capabilities == nil || st.Capabilities.Completions != nil {
			return true
		}
	}
	return false
}
