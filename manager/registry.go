package manager

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ResourceInfo describes one resource or resource template of a server.
type ResourceInfo struct {
	Server      string
	URI         string // for a template, its URI template
	Name        string
	Title       string
	Description string
	MIMEType    string
	Template    bool
	Available   bool
}

// PromptInfo describes one prompt in the namespaced registry.
type PromptInfo struct {
	FullName    string // Server + "." + Name
	Server      string
	Name        string
	Title       string
	Description string
	Arguments   []PromptArgument
	Available   bool
}

// PromptArgument is one argument a prompt accepts.
type PromptArgument struct {
	Name        string
	Description string
	Required    bool
}

// scope returns the supervisors of server, or all when server is "".
func (m *Manager) scope(server, op string) ([]*supervisor, error) {
	if server == "" {
		return m.supervisors(), nil
	}
	s, err := m.lookup(server, op)
	if err != nil {
		return nil, err
	}
	return []*supervisor{s}, nil
}

// Resources lists the resources and resource templates of one server, or of
// every server when server is "", by server then URI.
func (m *Manager) Resources(server string) ([]ResourceInfo, error) {
	sups, err := m.scope(server, "resources")
	if err != nil {
		return nil, err
	}
	var out []ResourceInfo
	for _, s := range sups {
		snap := s.snap.Load()
		if snap.cat == nil {
			continue
		}
		avail := snap.status.usable()
		for _, r := range snap.cat.resources {
			out = append(out, ResourceInfo{Server: s.name, URI: r.URI, Name: r.Name, Title: r.Title,
				Description: r.Description, MIMEType: r.MIMEType, Available: avail})
		}
		for _, t := range snap.cat.templates {
			out = append(out, ResourceInfo{Server: s.name, URI: t.URITemplate, Name: t.Name, Title: t.Title,
				Description: t.Description, MIMEType: t.MIMEType, Template: true, Available: avail})
		}
	}
	return out, nil
}

// ReadResource reads uri from server, or, when server is "", from the one
// server that lists that URI.
func (m *Manager) ReadResource(ctx context.Context, uri, server string, timeout time.Duration) (*mcp.ReadResourceResult, error) {
	op := fmt.Sprintf("resources/read %q", uri)
	var s *supervisor
	if server != "" {
		var err error
		if s, err = m.target(server, op); err != nil {
			return nil, err
		}
	} else {
		var owners []*supervisor
		for _, sup := range m.supervisors() {
			if cat := sup.snap.Load().cat; cat != nil && cat.hasResource(uri) {
				owners = append(owners, sup)
			}
		}
		switch len(owners) {
		case 0:
			return nil, errorf(CodeServerNotFound, "", op, "no server lists this resource; pass {server = name} to read it from a given server")
		case 1:
			s = owners[0]
		default:
			names := make([]string, len(owners))
			for i, o := range owners {
				names[i] = o.name
			}
			return nil, errorf(CodeAmbiguousTool, "", op, "several servers list this resource: %s; pass {server = name}", strings.Join(names, ", "))
		}
	}
	ctx, req, cancel := s.requestContext(ctx, timeout)
	defer s.inflight.end(req, cancel)
	var res *mcp.ReadResourceResult
	err := s.request(ctx, op, func(ctx context.Context, snap *snapshot) (bool, error) {
		var err error
		res, err = snap.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return false, newError(CodeInvocationFailed, s.name, op, s.callFailure(ctx, req, err, snap.conn))
		}
		return false, nil
	})
	return res, err
}

// Prompts lists the prompts of one server, or of every server when server
// is "", sorted by full name.
func (m *Manager) Prompts(server string) ([]PromptInfo, error) {
	sups, err := m.scope(server, "prompts")
	if err != nil {
		return nil, err
	}
	var out []PromptInfo
	for _, s := range sups {
		snap := s.snap.Load()
		if snap.cat == nil {
			continue
		}
		avail := snap.status.usable()
		for _, p := range snap.cat.prompts {
			info := PromptInfo{FullName: s.name + "." + p.Name, Server: s.name, Name: p.Name, Title: p.Title,
				Description: p.Description, Available: avail}
			for _, a := range p.Arguments {
				info.Arguments = append(info.Arguments, PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
			}
			out = append(out, info)
		}
	}
	return out, nil
}

// GetPrompt renders a prompt by full name ("server.prompt").
func (m *Manager) GetPrompt(ctx context.Context, name string, args map[string]string, timeout time.Duration) (*mcp.GetPromptResult, error) {
	server, prompt, ok := strings.Cut(strings.TrimSpace(name), ".")
	if !ok {
		return nil, errorf(CodeToolNotFound, "", "prompts/get", "prompt names are \"server.prompt\", got %q", name)
	}
	op := fmt.Sprintf("prompts/get %q", prompt)
	s, err := m.target(server, op)
	if err != nil {
		return nil, err
	}
	ctx, req, cancel := s.requestContext(ctx, timeout)
	defer s.inflight.end(req, cancel)
	var res *mcp.GetPromptResult
	err = s.request(ctx, op, func(ctx context.Context, snap *snapshot) (bool, error) {
		if !snap.cat.hasPrompt(prompt) {
			return false, errorf(CodeToolNotFound, s.name, op, "server has no prompt %q; its prompts: %s", prompt, strings.Join(snap.cat.promptNames(), ", "))
		}
		var err error
		res, err = snap.session.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt, Arguments: args})
		if err != nil {
			return false, newError(CodeInvocationFailed, s.name, op, s.callFailure(ctx, req, err, snap.conn))
		}
		return false, nil
	})
	return res, err
}

// requestContext bounds one request by timeout, or by the server's request
// timeout when zero; its cause says which limit ran out. The request is in
// flight (a drain that runs out abandons it) until s.inflight.end(id,
// cancel).
func (s *supervisor) requestContext(ctx context.Context, timeout time.Duration) (_ context.Context, id uint64, cancel context.CancelFunc) {
	cause := s.requestTimeout // boxed once: no allocation per request
	if timeout <= 0 {
		timeout = s.spec.Timeouts.Request
	} else if timeout != s.spec.Timeouts.Request {
		cause = timeoutError{timeout}
	}
	ctx, cancel = context.WithTimeoutCause(ctx, timeout, cause)
	return ctx, s.inflight.add(cancel), cancel
}
