package gateway

import (
	"context"
	"path"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ClientBudget gives the clients that call themselves Client another name
// budget than the gateway's: a client that shows tools to its model under
// a longer prefix of its own needs shorter names.
type ClientBudget struct {
	// Client is matched with path.Match against the name the client gives
	// in initialize (clientInfo.name): "claude-code", "Claude*".
	Client string
	// Budget is the longest tool or prompt name the client is offered,
	// kept within MinNameBudget and MaxNameBudget.
	Budget int
}

// SetClientBudgets replaces the rules that give clients other name
// budgets; the first rule whose Client matches decides. A client keeps
// the budget it was given when the gateway first saw it for as long as
// its session lasts, so that its names do not change under it.
func (g *Gateway) SetClientBudgets(rules []ClientBudget) {
	g.budgets.Store(&rules)
}

// budgetFor is the name budget of a client called name.
func (g *Gateway) budgetFor(name string) int {
	if rules := g.budgets.Load(); rules != nil {
		for _, r := range *rules {
			if ok, _ := path.Match(r.Client, name); ok {
				return nameBudget(r.Budget)
			}
		}
	}
	return g.names.tools.budget // set once, in New
}

// otherNames returns the names under budget, having the run goroutine
// name everything under it too the first time a client needs it.
func (g *Gateway) otherNames(budget int) *nameSet {
	if ns := g.currentView().other[budget]; ns != nil {
		return ns
	}
	_ = g.do(func() {
		if g.names.other[budget] != nil {
			return
		}
		if g.names.other == nil {
			g.names.other = map[int]*namers{}
		}
		g.names.other[budget] = newNamers(budget)
		g.refresh()
	})
	if ns := g.currentView().other[budget]; ns != nil {
		return ns
	}
	return newNameSet(nil, nil) // the gateway is closing
}

// clientNames offers a client its tools and prompts under its own budget
// (SetClientBudgets): the endpoint lists them under the gateway's, and
// for such a client the names are translated both ways, in the lists it
// gets and in the calls it makes. A server's own endpoint keeps the
// server's names.
func (ep *endpoint) clientNames(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list", "tools/call", "prompts/list", "prompts/get":
		default:
			return next(ctx, method, req)
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if ep.sel == oneServer || !ok || ss.InitializeParams() == nil || ep.isStatus(req) {
			return next(ctx, method, req)
		}
		budget := ep.g.clients.session(ep, ss).budget
		if budget == ep.g.names.tools.budget {
			return next(ctx, method, req)
		}
		theirs := ep.g.otherNames(budget)
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			if r.Params != nil {
				r.Params.Name = ep.ownName(ctx, r.Params.Name, func(ns *nameSet) map[string]itemKey { return ns.toolKey },
					func(v *view) map[itemKey]string { return v.own.tools }, budget)
			}
		case *mcp.GetPromptRequest:
			if r.Params != nil {
				r.Params.Name = ep.ownName(ctx, r.Params.Name, func(ns *nameSet) map[string]itemKey { return ns.promptKey },
					func(v *view) map[itemKey]string { return v.own.prompts }, budget)
			}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		own := ep.g.currentView().own
		switch r := res.(type) {
		case *mcp.ListToolsResult:
			r.Tools = renamed(r.Tools, func(t *mcp.Tool) *string { return &t.Name }, own.toolKey, theirs.tools)
		case *mcp.ListPromptsResult:
			r.Prompts = renamed(r.Prompts, func(p *mcp.Prompt) *string { return &p.Name }, own.promptKey, theirs.prompts)
		}
		return res, nil
	}
}

// renamed is items with the name a budget gives each (found by its
// gateway name's key), on copies: the items are the list every client
// shares.
func renamed[T any](items []*T, name func(*T) *string, keys map[string]itemKey, theirs map[itemKey]string) []*T {
	out := make([]*T, len(items))
	for i, it := range items {
		out[i] = it
		if n, ok := theirs[keys[*name(it)]]; ok {
			c := *it
			*name(&c) = n
			out[i] = &c
		}
	}
	return out
}

// ownName is the gateway's name for what a client of budget calls name:
// looked up in the current view, and again once the servers have had
// their first say if it is not there yet; a name it does not know is
// left as it is (the call then fails, or is routed by its prefix).
func (ep *endpoint) ownName(ctx context.Context, name string, keys func(*nameSet) map[string]itemKey, own func(*view) map[itemKey]string, budget int) string {
	g := ep.g
	lookup := func() (string, bool) {
		v := g.currentView()
		if ns := v.other[budget]; ns != nil {
			if k, ok := keys(ns)[name]; ok {
				mine, ok := own(v)[k]
				return mine, ok
			}
		}
		return "", false
	}
	if mine, ok := lookup(); ok {
		return mine
	}
	ep.settled(ctx)
	if mine, ok := lookup(); ok {
		return mine
	}
	return name
}

// clientNaming translates tool names between the endpoint's and those of
// a client given another budget; the zero value translates nothing.
type clientNaming struct {
	theirs, own *nameSet
}

// naming is how s's client names the endpoint's tools.
func (ep *endpoint) naming(s *session) clientNaming {
	if ep.sel == oneServer || s.budget == ep.g.names.tools.budget {
		return clientNaming{}
	}
	theirs := ep.g.otherNames(s.budget)
	return clientNaming{theirs: theirs, own: ep.g.currentView().own}
}

// toClient is the client's name for the endpoint's tool own.
func (n clientNaming) toClient(own string) string {
	if n.theirs == nil {
		return own
	}
	if k, ok := n.own.toolKey[own]; ok {
		if name, ok := n.theirs.tools[k]; ok {
			return name
		}
	}
	return own
}

// toOwn is the endpoint's name for what the client calls theirs.
func (n clientNaming) toOwn(theirs string) string {
	if n.theirs == nil {
		return theirs
	}
	if k, ok := n.theirs.toolKey[theirs]; ok {
		if name, ok := n.own.tools[k]; ok {
			return name
		}
	}
	return theirs
}
