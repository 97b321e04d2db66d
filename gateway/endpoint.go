package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/gateway/toolsearch"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/argschema"
)

// selection is what an endpoint serves.
type selection int

const (
	everything selection = iota // /mcp: every server, names prefixed
	oneServer                   // /servers/NAME/mcp: one server, its own names
	oneToolset                  // /toolsets/NAME/mcp: a toolset's tools, named as on /mcp
)

// endpoint is one MCP server the gateway serves: an mcp.Server whose
// tools, prompts and resources follow the manager's. Its lists are owned
// by the gateway's run goroutine, which alone adds and removes items; the
// SDK announces each burst of changes to the endpoint's clients with one
// list_changed notification. Request handlers read the routes it
// publishes.
type endpoint struct {
	g    *Gateway
	sel  selection
	name string // the server or toolset; "" for everything
	path string // the HTTP path, e.g. "/servers/git/mcp"
	srv  *mcp.Server
	// info is srv's Implementation as JSON: what a result of the 2026-07-28
	// generation names as its server (see tripShape).
	info json.RawMessage

	// Owned by the run goroutine.
	tools     map[string]toolRoute
	prompts   map[string]promptRoute
	resources map[string]string // URI or URI template → server

	routes atomic.Pointer[routeTable]
	// ttls is the time to live of the endpoint's lists, for SetCacheable
	// (the run goroutine stores it as it applies a view).
	ttls atomic.Pointer[listTTLs]
	// index finds the endpoint's tools by what they do, for clients in
	// search and code mode; nil until the first such client (the run
	// goroutine makes it and keeps it in step with tools).
	index *toolsearch.Index
	// searchable is index once made, for request handlers.
	searchable atomic.Pointer[toolsearch.Index]

	httpOnce  sync.Once
	streaming http.Handler
	sse       http.Handler
}

// route is where an exposed tool or prompt leads.
type route interface {
	target() [2]string // its server and its own name there
	listing() any      // what the server listed, which the endpoint shows
}

// reconcile makes an endpoint's list have match want: the names want
// lacks, or routes to another server's item, are removed (in one call, so
// clients hear of it once), then the new or changed ones are added in name
// order. An item add refuses is left out.
func reconcile[R route](have, want map[string]R, remove func(...string), add func(string, R) error) {
	var gone []string
	for name, r := range have {
		if w, ok := want[name]; !ok || w.target() != r.target() {
			gone = append(gone, name)
			delete(have, name)
		}
	}
	if len(gone) > 0 {
		remove(gone...)
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		w := want[name]
		if r, ok := have[name]; ok && sameJSON(r.listing(), w.listing()) {
			continue
		}
		if add(name, w) == nil {
			have[name] = w
		}
	}
}

func (r toolRoute) target() [2]string   { return [2]string{r.server, r.tool} }
func (r toolRoute) listing() any        { return r.from }
func (r promptRoute) target() [2]string { return [2]string{r.server, r.prompt} }
func (r promptRoute) listing() any      { return r.from }

// recovered turns a panic of the SDK over an item it finds unusable (a
// server's item is untrusted input) into *err.
func recovered(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%v", p)
	}
}

// toolRoute is where an exposed tool leads.
type toolRoute struct {
	server, tool string    // the server and its own name for the tool
	from         *mcp.Tool // the server's tool the listing was made from
	// headers is set when the tool's input schema binds arguments to
	// request headers (x-mcp-header), which the go-sdk checks on a
	// request of the sessionless generation.
	headers bool
}

type promptRoute struct {
	server, prompt string
	from           *mcp.Prompt
}

// routeTable is the endpoint's routing as request handlers see it.
type routeTable struct {
	tools map[string]toolRoute
	// pinned are the tools listed directly to clients in search mode.
	pinned map[string]bool
}

func (g *Gateway) newEndpoint(sel selection, name string) *endpoint {
	ep := &endpoint{g: g, sel: sel, name: name, tools: map[string]toolRoute{},
		prompts: map[string]promptRoute{}, resources: map[string]string{}}
	switch sel {
	case everything:
		ep.path = "/mcp"
	case oneServer:
		ep.path = "/servers/" + name + "/mcp"
	case oneToolset:
		ep.path = "/toolsets/" + name + "/mcp"
	}
	ep.routes.Store(&routeTable{tools: map[string]toolRoute{}})
	ep.ttls.Store(&listTTLs{})
	impl := &mcp.Implementation{Name: "mcpvisor", Version: g.opts.Version}
	// Clients may list before any server has connected: the lists exist
	// from the start and grow with list_changed.
	caps := &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Logging:   &mcp.LoggingCapabilities{},
	}
	var instructions string
	if sel == oneServer {
		// A server's own endpoint looks like the server, as far as it has
		// been seen: its name, instructions and the kinds of things it
		// offers (list changes are announced whether or not it does:
		// mcpvisor's own lists change as it reconnects).
		if st, err := g.src.Status(name); err == nil && st.ServerName != "" {
			impl = &mcp.Implementation{Name: st.ServerName, Version: st.ServerVersion}
			instructions = st.Instructions
			caps = mirrored(caps, st.Capabilities)
		}
	}
	opts := &mcp.ServerOptions{
		Capabilities: caps,
		Instructions: instructions,
		InitializedHandler: func(ctx context.Context, req *mcp.InitializedRequest) {
			g.clients.connected(ep, req.Session)
		},
		ProgressNotificationHandler: ep.clientProgress,
		SetCacheable:                ep.cacheable,
		KeepAlive:                   g.opts.KeepAlive,
	}
	if sel != oneToolset {
		opts.CompletionHandler = ep.complete // the SDK declares completions with it
	}
	if caps.Resources != nil && caps.Resources.Subscribe {
		// The SDK declares subscriptions whenever it has the handlers.
		opts.SubscribeHandler, opts.UnsubscribeHandler = ep.subscribe, ep.unsubscribe
	}
	ep.srv = mcp.NewServer(impl, opts)
	ep.info, _ = json.Marshal(impl)
	ep.srv.AddSendingMiddleware(formsAsSent)
	ep.srv.AddReceivingMiddleware(sseDiscover, ep.sessionless, ep.settleFirst, ep.modes, ep.clientNames, ep.unknownTools, ep.announce, ep.completions, ep.logLevels)
	if sel == everything {
		ep.addStatus()
	}
	return ep
}

// mirrored keeps of caps what the server declared in its own: a client
// of the server's endpoint sees no prompts capability from a server that
// has no prompts. Logging stays: mcpvisor answers logging/setLevel itself.
func mirrored(caps, server *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	if server == nil {
		return caps
	}
	out := *caps
	if server.Tools == nil {
		out.Tools = nil
	}
	if server.Prompts == nil {
		out.Prompts = nil
	}
	if server.Resources == nil {
		out.Resources = nil
	} else if !server.Resources.Subscribe {
		out.Resources = &mcp.ResourceCapabilities{ListChanged: true}
	}
	return &out
}

// apply makes the endpoint's lists match v. Only the run goroutine calls it.
func (ep *endpoint) apply(v *view) {
	ep.applyTools(v)
	if ep.sel != oneToolset {
		ep.applyPrompts(v)
		ep.applyResources(v)
	}
	ep.ttls.Store(ep.listTTLs(v))
}

func (ep *endpoint) applyTools(v *view) {
	want, pinned := ep.g.exposedTools(v, ep.sel, ep.name)
	reconcile(ep.tools, want, ep.srv.RemoveTools, func(name string, w toolRoute) error {
		if err := ep.addTool(name, w); err != nil {
			ep.g.log.Warn("tool not served", "server", w.server, "tool", w.tool, "endpoint", ep.path, "error", err)
			return err
		}
		return nil
	})
	ep.routes.Store(&routeTable{tools: maps.Clone(ep.tools), pinned: pinned})
	if ep.index != nil {
		ep.syncIndex(v)
	}
}

// exposedTools is what an endpoint of sel and name lists of v, by the
// name it lists each under, and which of those the user pinned.
func (g *Gateway) exposedTools(v *view, sel selection, name string) (map[string]toolRoute, map[string]bool) {
	want := map[string]toolRoute{}
	pinned := map[string]bool{}
	var keep []bool
	if sel == oneToolset {
		if ts := g.toolset(name); ts != nil {
			keep = ts.selected(v.tools)
		}
	}
	for i, t := range v.tools {
		exposed := t.Name
		switch sel {
		case everything:
			exposed = v.toolNames[itemKey{t.Server, t.Name}]
		case oneServer:
			if t.Server != name {
				continue
			}
		case oneToolset:
			if keep == nil || !keep[i] {
				continue
			}
			exposed = v.toolNames[itemKey{t.Server, t.Name}]
		}
		from := toolOf(t)
		rules := v.rules[t.Server]
		if d, ok := rules.Describe[t.Name]; ok {
			c := *from
			c.Description = d
			from = &c
		}
		want[exposed] = toolRoute{server: t.Server, tool: t.Name, from: from, headers: argschema.BindsHeaders(from.InputSchema)}
		if rules.Pinned(t.Name) {
			pinned[exposed] = true
		}
	}
	return want, pinned
}

// addTool lists one tool. The SDK panics on a tool it finds unusable (an
// input schema that is not an object, bad header annotations): a server's
// tool is untrusted input, so that is turned into an error.
func (ep *endpoint) addTool(name string, r toolRoute) (err error) {
	defer recovered(&err)
	def := *r.from
	def.Name = name
	def.InputSchema = objectSchema(def.InputSchema)
	ep.srv.AddTool(&def, ep.toolHandler(r.server, r.tool))
	return nil
}

func (ep *endpoint) applyPrompts(v *view) {
	want := map[string]promptRoute{}
	for _, p := range v.prompts {
		name := p.Name
		switch ep.sel {
		case everything:
			name = v.promptAs[itemKey{p.Server, p.Name}]
		case oneServer:
			if p.Server != ep.name {
				continue
			}
		}
		from := p.Prompt
		if from == nil {
			from = &mcp.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		}
		want[name] = promptRoute{server: p.Server, prompt: p.Name, from: from}
	}
	reconcile(ep.prompts, want, ep.srv.RemovePrompts, func(name string, w promptRoute) error {
		def := *w.from
		def.Name = name
		ep.srv.AddPrompt(&def, ep.promptHandler(w.server, w.prompt))
		return nil
	})
}

func (ep *endpoint) applyResources(v *view) {
	want := map[string]manager.ResourceInfo{}
	for _, r := range v.resources {
		if ep.sel == oneServer && r.Server != ep.name || ep.sel == everything && r.URI == StatusURI {
			continue
		}
		if _, dup := want[r.URI]; !dup { // the first server (by name) keeps a shared URI
			want[r.URI] = r
		}
	}
	var gone, goneTemplates []string
	for uri, server := range ep.resources {
		if w, ok := want[uri]; !ok || w.Server != server {
			if ok && w.Template || !ok && isTemplate(uri) {
				goneTemplates = append(goneTemplates, uri)
			} else {
				gone = append(gone, uri)
			}
			delete(ep.resources, uri)
		}
	}
	if len(gone) > 0 {
		ep.srv.RemoveResources(gone...)
	}
	if len(goneTemplates) > 0 {
		ep.srv.RemoveResourceTemplates(goneTemplates...)
	}
	for _, uri := range slices.Sorted(maps.Keys(want)) {
		w := want[uri]
		if _, ok := ep.resources[uri]; ok {
			continue
		}
		if err := ep.addResource(w); err != nil {
			ep.g.log.Warn("resource not served", "server", w.Server, "uri", uri, "endpoint", ep.path, "error", err)
			continue
		}
		ep.resources[uri] = w.Server
	}
}

// addResource lists one resource or template; the SDK panics on a URI it
// cannot parse, which a server may well send.
func (ep *endpoint) addResource(r manager.ResourceInfo) (err error) {
	defer recovered(&err)
	h := ep.resourceHandler(r.Server)
	if r.Template {
		t := r.ResourceTemplate
		if t == nil {
			t = &mcp.ResourceTemplate{URITemplate: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}
		}
		ep.srv.AddResourceTemplate(t, h)
		return nil
	}
	res := r.Resource
	if res == nil {
		res = &mcp.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}
	}
	ep.srv.AddResource(res, h)
	return nil
}

func isTemplate(uri string) bool { return slices.Contains([]byte(uri), '{') }

// toolOf is the server's tool as listed, or one made from the registry's
// fields.
func toolOf(t manager.ToolInfo) *mcp.Tool {
	if t.Tool != nil {
		return t.Tool
	}
	return &mcp.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema}
}

// objectSchema is s when it is a JSON object schema of type "object" (the
// only kind a tool may have), else the empty object schema: a server that
// sends something else still gets its tool listed and called, and the
// manager validates the arguments against what the server sent.
func objectSchema(s any) any {
	var m map[string]any
	switch v := s.(type) {
	case map[string]any:
		m = v
	case json.RawMessage:
		_ = json.Unmarshal(v, &m)
	default:
		b, err := json.Marshal(s)
		if err == nil {
			_ = json.Unmarshal(b, &m)
		}
	}
	if m == nil || m["type"] != "object" {
		return map[string]any{"type": "object"}
	}
	return m
}

// sameJSON reports whether two listings are the same, pointer first (the
// usual case: nothing changed), else by their JSON (a server relisted
// after a reconnect).
func sameJSON(a, b any) bool {
	if a == b {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
