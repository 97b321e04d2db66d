package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/manager/argschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind of discovered item, as list_changed notifications name them.
type listKind int

const (
	listTools listKind = 1 << iota
	listResources
	listPrompts
	listAll = listTools | listResources | listPrompts
)

// catalog is what discovery found on one server: tools, resources,
// resource templates and prompts (all pages), as its capabilities
// advertise. It is immutable once built; a refresh builds a new one.
type catalog struct {
	tools   []*mcp.Tool  // sorted by name
	callOps []string     // callOp of each tool, made once
	schemas *schemaCache // of tools; compiled on first use
	// unsafe holds the tools whose input schema cannot be used safely
	// (argschema.Safe), with the reason: listed, never called.
	unsafe    map[string]string
	resources []*mcp.Resource // sorted by URI
	templates []*mcp.ResourceTemplate
	prompts   []*mcp.Prompt // sorted by name
	// ttl is how long the server said each list may be cached, from its
	// latest list of that kind (the smallest of its pages; zero: no hint).
	ttl CacheTTL
	at  time.Time
	// refused is what the last discovery refused (screenNames).
	refused []refusal
}

// discoverError names the list operation that failed.
type discoverError struct {
	op  string
	err error
}

func (e *discoverError) Error() string { return e.op + ": " + e.err.Error() }
func (e *discoverError) Unwrap() error { return e.err }

// discover lists the kinds asked for, as the server's capabilities
// advertise them, all pages each, and returns a catalog that keeps the
// other kinds from prev (which may be nil).
func discover(ctx context.Context, sess *mcp.ClientSession, prev *catalog, kinds listKind) (*catalog, error) {
	next := &catalog{at: time.Now()}
	if prev != nil {
		*next = *prev
		next.at = time.Now()
	}
	next.refused = nil
	caps := sess.InitializeResult().Capabilities
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	if kinds&listTools != 0 {
		next.tools, next.callOps, next.schemas, next.unsafe = nil, nil, nil, nil
		next.ttl.Tools = 0
		if caps.Tools != nil {
			tools, ttl, err := pages(ctx, func(ctx context.Context, cursor string) ([]*mcp.Tool, string, int, error) {
				res, err := sess.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
				if err != nil {
					return nil, "", 0, err
				}
				return res.Tools, res.NextCursor, res.TTLMs, nil
			})
			next.ttl.Tools = ttl
			if err != nil {
				return nil, &discoverError{"tools/list", err}
			}
			slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
			tools, refused := screenNames("tool", tools, func(t *mcp.Tool) string { return t.Name })
			next.refused = append(next.refused, refused...)
			next.tools = tools
			next.callOps = make([]string, len(tools))
			for i, t := range tools {
				next.callOps[i] = callOp(t.Name)
			}
			next.schemas = &schemaCache{}
			next.unsafe = unsafeSchemas(tools)
		}
	}
	if kinds&listResources != 0 {
		next.resources, next.templates = nil, nil
		next.ttl.Resources, next.ttl.Templates = 0, 0
		if caps.Resources != nil {
			res, ttl, err := pages(ctx, func(ctx context.Context, cursor string) ([]*mcp.Resource, string, int, error) {
				res, err := sess.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
				if err != nil {
					return nil, "", 0, err
				}
				return res.Resources, res.NextCursor, res.TTLMs, nil
			})
			next.ttl.Resources = ttl
			if err != nil {
				return nil, &discoverError{"resources/list", err}
			}
			slices.SortFunc(res, func(a, b *mcp.Resource) int { return strings.Compare(a.URI, b.URI) })
			next.resources = res
			tmpl, ttl, err := pages(ctx, func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, int, error) {
				res, err := sess.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
				if err != nil {
					return nil, "", 0, err
				}
				return res.ResourceTemplates, res.NextCursor, res.TTLMs, nil
			})
			if err != nil && !isMethodNotFound(err) {
				return nil, &discoverError{"resources/templates/list", err}
			}
			next.templates, next.ttl.Templates = tmpl, ttl
		}
	}
	if kinds&listPrompts != 0 {
		next.prompts = nil
		next.ttl.Prompts = 0
		if caps.Prompts != nil {
			prompts, ttl, err := pages(ctx, func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, int, error) {
				res, err := sess.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
				if err != nil {
					return nil, "", 0, err
				}
				return res.Prompts, res.NextCursor, res.TTLMs, nil
			})
			next.ttl.Prompts = ttl
			if err != nil {
				return nil, &discoverError{"prompts/list", err}
			}
			slices.SortFunc(prompts, func(a, b *mcp.Prompt) int { return strings.Compare(a.Name, b.Name) })
			prompts, refused := screenNames("prompt", prompts, func(p *mcp.Prompt) string { return p.Name })
			next.refused = append(next.refused, refused...)
			next.prompts = prompts
		}
	}
	return next, nil
}

// unsafeSchemas finds the tools whose input schema cannot be used safely.
func unsafeSchemas(tools []*mcp.Tool) map[string]string {
	var out map[string]string
	for _, t := range tools {
		if t.InputSchema == nil {
			continue
		}
		if err := argschema.Safe(t.InputSchema); err != nil {
			if out == nil {
				out = map[string]string{}
			}
			out[t.Name] = err.Error()
		}
	}
	return out
}

// pages lists every page of one kind, following the cursors, and returns
// the items and the smallest time to live a page carried (zero when none
// gave one: a negative or zero hint is no hint). A server that hands back
// a cursor it gave before would be listed forever: that is an error.
func pages[T any](ctx context.Context, list func(ctx context.Context, cursor string) (items []T, next string, ttlMs int, err error)) ([]T, time.Duration, error) {
	var (
		out    []T
		cursor string
		ttl    time.Duration
		seen   = map[string]bool{}
	)
	for {
		items, next, ttlMs, err := list(ctx, cursor)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, items...)
		if d := time.Duration(ttlMs) * time.Millisecond; ttlMs > 0 && (ttl == 0 || d < ttl) {
			ttl = d
		}
		if next == "" {
			return out, ttl, nil
		}
		if seen[next] {
			return nil, 0, fmt.Errorf("the server gave the cursor %q a second time: its list would never end", next)
		}
		seen[next] = true
		cursor = next
	}
}

// isMethodNotFound reports a JSON-RPC -32601 answer: the server does not
// implement the method (optional lists, ping in protocol 2026-07-28).
func isMethodNotFound(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound
}

// problem says why a tool cannot be called safely; "" if it can. Nil-safe.
func (c *catalog) problem(tool string) string {
	if c == nil {
		return ""
	}
	return c.unsafe[tool]
}

// toolList is nil-safe: a server not yet discovered has no tools.
func (c *catalog) toolList() []*mcp.Tool {
	if c == nil {
		return nil
	}
	return c.tools
}

func (c *catalog) toolNames() []string {
	if c == nil {
		return nil
	}
	names := make([]string, len(c.tools))
	for i, t := range c.tools {
		names[i] = t.Name
	}
	return names
}

func (c *catalog) resourceNames() []string {
	if c == nil {
		return nil
	}
	names := make([]string, 0, len(c.resources)+len(c.templates))
	for _, r := range c.resources {
		names = append(names, r.URI)
	}
	for _, t := range c.templates {
		names = append(names, t.URITemplate)
	}
	return names
}

func (c *catalog) promptNames() []string {
	if c == nil {
		return nil
	}
	names := make([]string, len(c.prompts))
	for i, p := range c.prompts {
		names[i] = p.Name
	}
	return names
}

func (c *catalog) tool(name string) *mcp.Tool {
	if i, ok := c.toolIndex(name); ok {
		return c.tools[i]
	}
	return nil
}

func (c *catalog) toolIndex(name string) (int, bool) {
	if c == nil {
		return 0, false
	}
	return slices.BinarySearchFunc(c.tools, name, func(t *mcp.Tool, n string) int { return strings.Compare(t.Name, n) })
}

// callOp is the operation of a call of tool name, as errors name it:
// tools/call "name". For a listed tool it is made once, at discovery.
func (c *catalog) callOp(name string) string {
	if i, ok := c.toolIndex(name); ok {
		return c.callOps[i]
	}
	return callOp(name)
}

func callOp(tool string) string { return fmt.Sprintf("tools/call %q", tool) }

// diffNames returns the names only in next (added) and only in prev
// (removed), each sorted and never nil: an event says "removed: []", not
// "removed: null".
func diffNames(prev, next []string) (added, removed []string) {
	added, removed = []string{}, []string{}
	inPrev := make(map[string]bool, len(prev))
	for _, p := range prev {
		inPrev[p] = true
	}
	inNext := make(map[string]bool, len(next))
	for _, n := range next {
		inNext[n] = true
		if !inPrev[n] {
			added = append(added, n)
		}
	}
	for _, p := range prev {
		if !inNext[p] {
			removed = append(removed, p)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

func (c *catalog) hasResource(uri string) bool {
	if c == nil {
		return false
	}
	for _, r := range c.resources {
		if r.URI == uri {
			return true
		}
	}
	return false
}

func (c *catalog) hasPrompt(name string) bool {
	return c != nil && slices.Contains(c.promptNames(), name)
}

// schemaCache holds the compiled input schemas of one tool list. Schemas
// are compiled when a tool is first called: a compiled schema costs
// kilobytes, and most tools of most servers are never called.
type schemaCache struct {
	mu sync.Mutex
	// mu guards compiled; a nil entry is a schema that does not compile
	// (the call is then not checked here; the server still validates).
	compiled map[string]*argschema.Schema
	headers  map[string]bool // whether a tool's schema binds arguments to HTTP headers
}

// headerBound reports whether tool t's input schema names an HTTP header
// for an argument (x-mcp-header): the go-sdk's client sends such a call
// of a 2026-07-28 server with headers the raw path does not write.
func (c *catalog) headerBound(t *mcp.Tool) bool {
	if c == nil || c.schemas == nil || t == nil {
		return false
	}
	sc := c.schemas
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if b, ok := sc.headers[t.Name]; ok {
		return b
	}
	b := argschema.BindsHeaders(t.InputSchema)
	if sc.headers == nil {
		sc.headers = make(map[string]bool)
	}
	sc.headers[t.Name] = b
	return b
}

// schema returns the compiled input schema of tool t, or nil.
func (c *catalog) schema(t *mcp.Tool) *argschema.Schema {
	if c == nil || c.schemas == nil || t == nil {
		return nil
	}
	sc := c.schemas
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if s, ok := sc.compiled[t.Name]; ok {
		return s
	}
	s, err := argschema.Compile(t.InputSchema)
	if err != nil {
		s = nil
	}
	if sc.compiled == nil {
		sc.compiled = make(map[string]*argschema.Schema)
	}
	sc.compiled[t.Name] = s
	return s
}
