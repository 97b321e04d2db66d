package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/suggest"
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
	// Resource or ResourceTemplate (for a template) is the item exactly
	// as the server listed it, for those who relay it. Shared: do not
	// modify it.
	Resource         *mcp.Resource
	ResourceTemplate *mcp.ResourceTemplate
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
	// Prompt is the prompt exactly as the server listed it, for those who
	// relay it. Shared: do not modify it.
	Prompt *mcp.Prompt
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
				Description: r.Description, MIMEType: r.MIMEType, Available: avail, Resource: r})
		}
		for _, t := range snap.cat.templates {
			out = append(out, ResourceInfo{Server: s.name, URI: t.URITemplate, Name: t.Name, Title: t.Title,
				Description: t.Description, MIMEType: t.MIMEType, Template: true, Available: avail, ResourceTemplate: t})
		}
	}
	return out, nil
}

// ReadResource reads uri from server, or, when server is "", from the one
// server that lists that URI.
func (m *Manager) ReadResource(ctx context.Context, uri, server string, timeout time.Duration) (*mcp.ReadResourceResult, error) {
	op := fmt.Sprintf("resources/read %q", uri)
	s, err := m.resourceServer(server, uri, op)
	if err != nil {
		return nil, err
	}
	ctx, req, cancel := s.requestContext(ctx, timeout)
	defer s.inflight.End(req, cancel)
	var res *mcp.ReadResourceResult
	err = s.request(ctx, op, false, func(ctx context.Context, snap *snapshot) (bool, error) {
		var err error
		res, err = snap.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return false, invocationFailed(s.name, op, s.callFailure(ctx, req, err, snap.conn))
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
				Description: p.Description, Available: avail, Prompt: p}
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
		return nil, errorf(CodePromptNotFound, "", "prompts/get", "prompt names are \"server.prompt\", got %q", name)
	}
	op := fmt.Sprintf("prompts/get %q", prompt)
	s, err := m.target(server, op)
	if err != nil {
		return nil, err
	}
	ctx, req, cancel := s.requestContext(ctx, timeout)
	defer s.inflight.End(req, cancel)
	var res *mcp.GetPromptResult
	err = s.request(ctx, op, false, func(ctx context.Context, snap *snapshot) (bool, error) {
		if !snap.cat.hasPrompt(prompt) {
			return false, errorf(CodePromptNotFound, s.name, op, "server has no prompt %q; its prompts: %s", prompt, strings.Join(snap.cat.promptNames(), ", "))
		}
		var err error
		res, err = snap.session.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt, Arguments: args})
		if err != nil {
			return false, invocationFailed(s.name, op, s.callFailure(ctx, req, err, snap.conn))
		}
		return false, nil
	})
	return res, err
}

// Complete asks server for completions of a prompt's or a resource
// template's argument (completion/complete), the reference named as the
// server names it. A per-client server answers on client's own session,
// as a call of client's would be (see [CallOptions.Client]); "" is the
// host. A prompt the server does not list is refused before anything is
// sent; anything else is the server's to answer.
func (m *Manager) Complete(ctx context.Context, server, client string, params *mcp.CompleteParams, timeout time.Duration) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, errorf(CodeInvalidArguments, server, "completion/complete", "the request names no prompt or resource template (ref)")
	}
	op := fmt.Sprintf("completion/complete %q", params.Ref.Name)
	if params.Ref.Type == "ref/resource" {
		op = fmt.Sprintf("completion/complete %q", params.Ref.URI)
	}
	s, err := m.target(server, op)
	if err != nil {
		return nil, err
	}
	if s, err = s.target(client, op); err != nil {
		return nil, err
	}
	ctx, req, cancel := s.requestContext(ctx, timeout)
	defer s.inflight.End(req, cancel)
	var res *mcp.CompleteResult
	err = s.request(ctx, op, false, func(ctx context.Context, snap *snapshot) (bool, error) {
		if params.Ref.Type == "ref/prompt" && !snap.cat.hasPrompt(params.Ref.Name) {
			return false, errorf(CodePromptNotFound, s.name, op, "server has no prompt %q; its prompts: %s", params.Ref.Name, strings.Join(snap.cat.promptNames(), ", "))
		}
		var err error
		res, err = snap.session.Complete(ctx, params)
		if err != nil {
			return false, invocationFailed(s.name, op, s.callFailure(ctx, req, err, snap.conn))
		}
		return false, nil
	})
	return res, err
}

// Tools lists the tools of one server, or of every server when server is
// "", sorted by full name. Tools of servers that are not connected are
// listed with Available false; a removed server's tools are gone.
func (m *Manager) Tools(server string) ([]ToolInfo, error) {
	sups := m.supervisors()
	if server != "" {
		s, err := m.lookup(server, "tools")
		if err != nil {
			return nil, err
		}
		sups = []*supervisor{s}
	}
	var out []ToolInfo
	for _, s := range sups {
		snap := s.snap.Load()
		avail := snap.status.usable()
		for _, t := range snap.cat.toolList() {
			out = append(out, ToolInfo{
				FullName:    s.name + "." + t.Name,
				Server:      s.name,
				Name:        t.Name,
				Title:       t.Title,
				Description: t.Description,
				InputSchema: t.InputSchema,
				Available:   avail && snap.cat.problem(t.Name) == "",
				Problem:     snap.cat.problem(t.Name),
				Tool:        t,
			})
		}
	}
	return out, nil
}

// resolve maps a full or bare tool name to its server and tool: a bare
// name resolves when exactly one server has it, several are AMBIGUOUS_TOOL
// and none is TOOL_NOT_FOUND with close matches.
func (m *Manager) resolve(name string) (*supervisor, string, error) {
	name = strings.TrimSpace(name)
	if server, tool, ok := strings.Cut(name, "."); ok {
		if s, _, _ := m.find(server); s != nil {
			return s, tool, nil // without making the op its errors would name
		}
		s, err := m.target(server, callOp(tool))
		if err == nil || errors.Is(err, ErrClosed) {
			return s, tool, err
		}
	}
	var matches []*supervisor
	var all, close []string
	qualified := strings.Contains(name, ".")
	for _, s := range m.supervisors() {
		for _, t := range s.snap.Load().cat.toolList() {
			full := s.name + "." + t.Name
			all = append(all, full)
			if t.Name == name {
				matches = append(matches, s)
			}
			// A typo of the full name, or of the tool's own name for a bare name.
			candidates := []string{full}
			if !qualified {
				candidates = append(candidates, t.Name)
			}
			if len(suggest.CloseMatches(name, candidates)) > 0 {
				close = append(close, full)
			}
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], name, nil
	case 0:
		msg := fmt.Sprintf("no tool %q", name)
		if server, _, ok := strings.Cut(name, "."); ok {
			msg = fmt.Sprintf("no server %q and no tool %q", server, name)
		}
		if len(close) > 0 {
			msg += "; did you mean " + quoteList(close) + "?"
		} else if len(all) == 0 {
			msg += "; no tools are known yet (no server has connected)"
		}
		return nil, "", errorf(CodeToolNotFound, "", "call", "%s", msg)
	}
	var full []string
	for _, s := range matches {
		full = append(full, s.name+"."+name)
	}
	return nil, "", errorf(CodeAmbiguousTool, "", "call", "tool %q is offered by %d servers; call one of: %s", name, len(full), strings.Join(full, ", "))
}

func toolNotFound(server, tool string, names []string) error {
	msg := fmt.Sprintf("server has no tool %q", tool)
	if close := suggest.CloseMatches(tool, names); len(close) > 0 {
		msg += "; did you mean " + quoteList(close) + "?"
	} else if len(names) > 0 {
		msg += "; its tools: " + strings.Join(names, ", ")
	}
	return errorf(CodeToolNotFound, server, callOp(tool), "%s", msg)
}

// quoteList renders names as "a", "b" or "c".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// ToolInfo describes one tool in the namespaced registry.
type ToolInfo struct {
	// FullName is Server + "." + Name, the name to call it by.
	FullName    string
	Server      string
	Name        string // as the server names it
	Title       string
	Description string
	// InputSchema is the tool's JSON schema as the server sent it.
	InputSchema any
	// Available is false while its server cannot serve a call (backoff,
	// circuit open, failed, disabled); the tool stays listed with its last
	// known shape. An idle server's tools are available: a call reconnects it.
	Available bool
	// Problem says why the tool cannot be called even while its server is
	// connected (its input schema cannot be used safely); "" if none.
	Problem string
	// Tool is the tool exactly as the server listed it (annotations,
	// output schema, _meta and all), for those who relay it. Shared: do
	// not modify it.
	Tool *mcp.Tool
}

// resourceServer is the server named server, or if "" the one server
// that lists uri.
func (m *Manager) resourceServer(server, uri, op string) (*supervisor, error) {
	if server != "" {
		return m.target(server, op)
	}
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
		return owners[0], nil
	}
	names := make([]string, len(owners))
	for i, o := range owners {
		names[i] = o.name
	}
	return nil, errorf(CodeAmbiguousTool, "", op, "several servers list this resource: %s; pass {server = name}", strings.Join(names, ", "))
}

// Subscribe asks server (if "", the one server that lists uri) to tell
// when the resource at uri changes, and
// keeps asking across reconnects until as many Unsubscribe calls: each
// change comes as a notification event (method
// notifications/resources/updated, params {uri}). Subscriptions are
// counted, so several callers may hold one each. It returns at once; a
// server that does not offer subscriptions gets none.
func (m *Manager) Subscribe(server, uri string) error {
	s, err := m.resourceServer(server, uri, fmt.Sprintf("resources/subscribe %q", uri))
	if err != nil {
		return err
	}
	s.subs.change(uri, +1)
	s.subsDirty.Store(true)
	s.wake()
	return nil
}

// Unsubscribe drops one subscription to uri taken with Subscribe.
func (m *Manager) Unsubscribe(server, uri string) error {
	s, err := m.resourceServer(server, uri, fmt.Sprintf("resources/unsubscribe %q", uri))
	if err != nil {
		return err
	}
	s.subs.change(uri, -1)
	s.subsDirty.Store(true)
	s.wake()
	return nil
}

// logLevelOrder is the order of the log levels, most verbose first.
var logLevelOrder = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// defaultLogLevel is what servers are asked for when nobody holds a more
// verbose level: their log messages become notices and events.
const defaultLogLevel mcp.LoggingLevel = "info"

// HoldLogLevel asks every server, now and whenever it connects, to send
// log messages at level or above, until release is called: servers are
// asked for the most verbose level held, and for info (the default) when
// none more verbose is. An unknown level is held as info. A server that
// does not offer logging is not asked.
func (m *Manager) HoldLogLevel(level string) (release func()) {
	l := mcp.LoggingLevel(level)
	if !slices.Contains(logLevelOrder, l) {
		l = defaultLogLevel
	}
	return m.holdLevel(l, nil)
}

// holdLevel holds l until release is called, as HoldLogLevel does; also,
// if not nil, is a supervisor to ask besides the declared servers' (a
// client's own session of a per-client server).
func (m *Manager) holdLevel(l mcp.LoggingLevel, also *supervisor) (release func()) {
	m.levels.change(l, +1)
	m.levelsChanged(also)
	var once sync.Once
	return func() {
		once.Do(func() {
			m.levels.change(l, -1)
			m.levelsChanged(also)
		})
	}
}

// levelsChanged has every server, and also if not nil, asked for the
// level now wanted.
func (m *Manager) levelsChanged(also *supervisor) {
	list := m.supervisors()
	if also != nil {
		list = append(list, also)
	}
	for _, s := range list {
		s.levelDirty.Store(true)
		s.wake()
	}
}

// callLevel is what a call whose caller wants log messages at level
// (CallOptions.LogLevel) does before it is sent on s: it holds the level
// for the call's length (release lets go of it), and has the session
// asked for it, so that what the server logs during the call at that
// level is sent at all. An unknown level, or none, holds nothing.
func (s *supervisor) callLevel(level string) (l mcp.LoggingLevel, release func()) {
	l = mcp.LoggingLevel(level)
	if !slices.Contains(logLevelOrder, l) {
		return "", func() {}
	}
	return l, s.m.holdLevel(l, s)
}

// levelFor prepares params, about to be sent on snap's session, for a
// caller that wants log messages at level ("" for none): a session of
// 2026-07-28 or later has no level of its own, and each request names the
// level wanted in its _meta (the caller's, or the level servers are
// asked for when that is more verbose); on an older session it waits
// until the server has answered the logging/setLevel asking for level, or
// a more verbose one (see callLevel), so that the call is not sent before
// the server logs at that level. A raw call, which writes its own
// request, passes nil params: it is sent on older sessions only.
func (s *supervisor) levelFor(ctx context.Context, snap *snapshot, params *mcp.CallToolParams, level mcp.LoggingLevel) {
	caps := snap.session.InitializeResult().Capabilities
	if caps == nil || caps.Logging == nil {
		return // a server that does not log is not asked
	}
	if legacyProtocol(snap) {
		if level != "" && !snap.conn.awaitLevel(ctx, level) {
			s.m.log.Warn("the server has not answered logging/setLevel; the call is sent without waiting longer",
				"server", s.name, "level", level, "waited", levelWait)
		}
		return
	}
	if params == nil {
		return
	}
	want := s.m.levels.level()
	if level != "" && atLeastAsVerbose(level, want) {
		want = level
	}
	meta := params.GetMeta()
	if meta == nil {
		meta = map[string]any{}
	}
	meta[mcp.MetaKeyLogLevel] = want
	params.SetMeta(meta)
}

// logLevelOf is the log level a call without one of its own names in its
// _meta on snap's session of 2026-07-28 or later, as levelFor sets it:
// the level servers are asked for, or "" for a server that does not log.
func (s *supervisor) logLevelOf(snap *snapshot) mcp.LoggingLevel {
	caps := snap.session.InitializeResult().Capabilities
	if caps == nil || caps.Logging == nil {
		return ""
	}
	return s.m.levels.level()
}

// atLeastAsVerbose reports whether a level asks for all that b does.
func atLeastAsVerbose(a, b mcp.LoggingLevel) bool {
	return slices.Index(logLevelOrder, a) <= slices.Index(logLevelOrder, b)
}

// levelAnswers follows a session's logging/setLevel requests: the level
// last asked for, and whether the server has answered (or the request
// has failed).
type levelAnswers struct {
	mu sync.Mutex
	// mu guards the following; changed is closed, and replaced, whenever
	// asked or answered changes.
	asked    mcp.LoggingLevel
	answered bool
	changed  chan struct{}
}

// set records a request for level, answered or not yet.
func (a *levelAnswers) set(level mcp.LoggingLevel, answered bool) {
	a.mu.Lock()
	a.asked, a.answered = level, answered
	changed := a.changed
	a.changed = nil
	a.mu.Unlock()
	if changed != nil {
		close(changed)
	}
}

// giveUp counts the request last made as answered, so that calls stop
// waiting for a server that does not answer it; the answer, if it comes,
// changes nothing.
func (a *levelAnswers) giveUp() {
	a.mu.Lock()
	a.answered = true
	changed := a.changed
	a.changed = nil
	a.mu.Unlock()
	if changed != nil {
		close(changed)
	}
}

// covers reports whether the server has answered a request for level, or
// a more verbose one, with none asked since; if not, changed is closed
// once that may have changed.
func (a *levelAnswers) covers(level mcp.LoggingLevel) (ok bool, changed <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.answered && a.asked != "" && atLeastAsVerbose(a.asked, level) {
		return true, nil
	}
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return false, a.changed
}

// levelWait is how long a call waits at most for its server to answer
// the logging/setLevel asking for the level the call wants: a server slow
// to answer, or one that never does, delays calls by that much and no
// more, and the call is then sent, the server perhaps not yet logging at
// that level.
const levelWait = 5 * time.Second

// awaitLevel waits until c's server has answered a logging/setLevel
// asking for level or a more verbose one, with no other request for a
// level on its way (one for less would lower it again), or until the
// session or ctx ends. The level must be held (holdLevel), so that it is
// asked for. After levelWait it stops waiting, and so does every other
// call waiting for the same request, and reports false; otherwise it
// reports true, the server answered or not (ctx or the session ended).
func (c *conn) awaitLevel(ctx context.Context, level mcp.LoggingLevel) (answered bool) {
	var limit *time.Timer
	for {
		ok, changed := c.answers.covers(level)
		if ok {
			return true
		}
		if limit == nil {
			limit = time.NewTimer(levelWait)
			defer limit.Stop()
		}
		select {
		case <-changed:
		case <-limit.C:
			c.answers.giveUp()
			return false
		case <-c.waited:
			return true
		case <-ctx.Done():
			return true
		}
	}
}

// logLevels counts the log levels held (HoldLogLevel).
type logLevels struct {
	mu sync.Mutex
	// mu guards held and wanted.
	held   map[mcp.LoggingLevel]int
	wanted mcp.LoggingLevel // the most verbose held, if more verbose than the default
}

func (l *logLevels) change(level mcp.LoggingLevel, by int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == nil {
		l.held = map[mcp.LoggingLevel]int{}
	}
	if l.held[level] += by; l.held[level] <= 0 {
		delete(l.held, level)
	}
	l.wanted = defaultLogLevel
	for _, lv := range logLevelOrder {
		if lv == defaultLogLevel || l.held[lv] > 0 {
			l.wanted = lv
			break
		}
	}
}

// level is the level servers are asked for.
func (l *logLevels) level() mcp.LoggingLevel {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wanted == "" {
		return defaultLogLevel
	}
	return l.wanted
}

// syncLogLevel has the session asked for the level now wanted. It runs
// on the supervisor goroutine; the requests go out one at a time from a
// goroutine of the connection (askLogLevels), which close waits for, so
// that however quickly the level changes the server is left at the one
// last wanted.
func (s *supervisor) syncLogLevel(c *conn) {
	caps := c.session.InitializeResult().Capabilities
	if caps == nil || caps.Logging == nil || c.waited == nil {
		return
	}
	if c.levelWake == nil {
		c.levelWake = make(chan struct{}, 1)
		c.requests.Go(func() { s.askLogLevels(c) })
	}
	select {
	case c.levelWake <- struct{}{}:
	default: // a wake is pending: it reads the level then
	}
}

// askLogLevels asks c's session for the level wanted whenever it is woken
// and that is not the level it last asked for, until the session ends.
func (s *supervisor) askLogLevels(c *conn) {
	asked := c.level // what the connection attempt asked for
	for {
		select {
		case <-c.levelWake:
		case <-c.waited:
			return
		}
		want := s.m.levels.level()
		if want == asked {
			continue
		}
		asked = want
		c.answers.set(want, false)
		ctx, cancel := context.WithTimeout(context.Background(), s.spec.Timeouts.Request)
		// A refusal is not worth failing the session for.
		_ = c.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: want})
		cancel()
		c.answers.set(want, true)
	}
}

// subscriptions counts the subscriptions callers hold, by URI.
type subscriptions struct {
	mu sync.Mutex
	// mu guards uris.
	uris map[string]int
}

func (t *subscriptions) change(uri string, by int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.uris == nil {
		t.uris = map[string]int{}
	}
	if n := t.uris[uri] + by; n > 0 {
		t.uris[uri] = n
	} else {
		delete(t.uris, uri)
	}
}

func (t *subscriptions) wanted() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]bool, len(t.uris))
	for u := range t.uris {
		out[u] = true
	}
	return out
}

// syncSubscriptions brings the session's subscriptions in line with what
// callers hold. It runs on the supervisor goroutine; the requests run on
// goroutines of the connection, which close waits for: on 2026-07-28 a
// subscription is a stream that lasts until it is dropped.
func (s *supervisor) syncSubscriptions(c *conn) {
	init := c.session.InitializeResult()
	if init == nil || init.Capabilities == nil || init.Capabilities.Resources == nil || !init.Capabilities.Resources.Subscribe {
		return
	}
	want := s.subs.wanted()
	if c.subscribed == nil {
		c.subscribed = map[string]bool{}
	}
	for uri := range want {
		if c.subscribed[uri] {
			continue
		}
		c.subscribed[uri] = true
		c.requests.Go(func() {
			err := c.session.Subscribe(context.WithoutCancel(s.ctx), &mcp.SubscribeParams{URI: uri})
			if err != nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.Is(err, context.Canceled) {
				s.m.log.Warn("resource subscription failed", "server", s.name, "uri", uri, "error", s.hide(err))
			}
		})
	}
	for uri := range c.subscribed {
		if want[uri] {
			continue
		}
		delete(c.subscribed, uri)
		c.requests.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), s.spec.Timeouts.Request)
			defer cancel()
			_ = c.session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
		})
	}
}
