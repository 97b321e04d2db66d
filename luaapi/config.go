package luaapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	lua "github.com/yuin/gopher-lua"
)

// desired is what one evaluation of the config file declares, the source of
// truth for those servers: mcp_add records here instead of acting, and the
// result is applied as a difference only if the whole file succeeds.
type desired struct {
	file       string
	order      []string                 // name keys in declaration order
	servers    map[string]declaration   // by lower-cased name
	serve      *serveDecl               // mcp_serve, if declared
	toolsets   map[string]toolsetDecl   // mcp_toolset, by name
	budgets    []nameBudgetDecl         // mcp_name_budget, in order
	clientMode *clientModeDecl          // mcp_client_mode, if set
	luaTools   map[string]luaToolDecl   // mcp_tool, by lower-cased server "." tool
	handlers   map[ask.Kind]*askHandler // mcp_handle, by kind (a nil function removes)
	roots      *rootsDecl               // mcp_roots, if declared
	gen        int                      // the config generation evaluating it
	// checking is set when the evaluation only checks the file: what
	// needs the gateway may be declared without one.
	checking bool
}

type declaration struct {
	name  string
	spec  manager.Spec
	where string // "startup.lua:12"
}

// DefaultConfigBudget is Options.ConfigBudget when zero: far more than a
// config needs to declare its servers, far less than a person waits
// before thinking the host is stuck.
const DefaultConfigBudget = 5 * time.Second

// configState is what the last applied config declared; owned by the loop.
type configState struct {
	generation int                     // evaluations so far
	applied    bool                    // a config has been applied
	servers    map[string]manager.Spec // by manager.NameKey
	names      map[string]string       // the declared name of each key
	serve      *serveDecl              // the listener it declared
}

// ConfigResult says what applying a config changed.
type ConfigResult struct {
	Added, Removed, Replaced []string
	Unchanged                int

	pending []replacement // replaced servers to add once the old ones are gone
	serve   *pendingServe // the listener to start or stop, if it changed
}

// pendingServe is a change of listener the config asked for.
type pendingServe struct {
	decl  serveDecl
	reply <-chan error
}

type replacement struct {
	name string
	spec manager.Spec
	gone <-chan struct{}
}

// finishReplacements adds each replaced server once its predecessor is
// disposed. It runs off the loop: disposal may take the stop grace.
func (r *Runtime) finishReplacements(ctx context.Context, res ConfigResult) {
	for _, p := range res.pending {
		select {
		case <-p.gone:
		case <-ctx.Done():
			return
		}
		if err := r.servers.Add(p.name, p.spec); err != nil {
			r.opts.Logger.Error("config: cannot replace server", "server", p.name, "error", err)
		}
	}
}

// LoadConfig evaluates a config file afresh into a desired set of servers
// and, if the whole file succeeds, applies only the difference to the
// manager: unchanged servers are not touched, changed ones are replaced,
// ones gone from the file removed, new ones added; servers added at the
// REPL are kept. Hooks and timers the previous evaluation registered are
// replaced by the new ones. If anything fails (syntax, runtime, validation,
// a name declared twice), nothing changes, the error says file:line, and a
// config_error event is published.
//
// A file that runs past its time budget (Options.ConfigBudget) is stopped
// there, with an error that Is ErrConfigBudget. When no config has been
// applied yet (the host is starting), what it declared before it was
// stopped is applied all the same, so the host comes up with those
// servers; a reload that runs over changes nothing, like any other error.
func (r *Runtime) LoadConfig(ctx context.Context, path string) (ConfigResult, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		err = fmt.Errorf("read %s: %w", path, err)
		r.bus.Emit("", "", ConfigError{File: path, Error: err.Error()})
		return ConfigResult{}, err
	}
	return r.LoadConfigSource(ctx, path, string(src))
}

// LoadConfigSource is LoadConfig with the file's content given.
//
// A listener the file declares with mcp_serve is started (or moved, or
// stopped when the file no longer declares one) once the file has been
// applied; if that fails, the rest of the config stays applied, the error
// is returned and published as config_error, and the next load tries
// again.
func (r *Runtime) LoadConfigSource(ctx context.Context, path, src string) (ConfigResult, error) {
	res, _, err := r.evalConfig(ctx, path, src, true)
	if err != nil && !errors.Is(err, ErrConfigBudget) {
		return res, err
	}
	if p := res.serve; p != nil {
		if serr := r.listener.wait(p.reply); serr != nil {
			serr = serveError(p.decl, serr)
			if err == nil {
				err = serr
			} else {
				err = errors.Join(err, serr)
			}
			r.bus.Emit("", "", ConfigError{File: path, Error: serr.Error()})
			// Nothing listens now: forget the declaration so that a reload
			// declaring the same listener tries again.
			r.post(func() {
				if s := r.config.serve; s != nil && *s == p.decl {
					r.config.serve = nil
				}
			})
		}
	}
	r.finishReplacements(ctx, res)
	return res, err
}

// Declared is one server a config declares.
type Declared struct {
	Name  string
	Spec  manager.Spec
	Where string // file:line of its mcp_add
}

// CheckConfig evaluates a config without applying it: it returns what the
// file declares, or the error LoadConfig would report. Hooks and timers the
// file registers are dropped again.
func (r *Runtime) CheckConfig(ctx context.Context, path, src string) ([]Declared, error) {
	_, decls, err := r.evalConfig(ctx, path, src, false)
	return decls, err
}

func (r *Runtime) evalConfig(ctx context.Context, path, src string, apply bool) (ConfigResult, []Declared, error) {
	type outcome struct {
		res   ConfigResult
		decls []Declared
		err   error
	}
	ch := make(chan outcome, 1)
	chunk := filepath.Base(path)
	ok := r.post(func() {
		r.config.generation++
		gen := r.config.generation
		want := &desired{file: chunk, servers: make(map[string]declaration), toolsets: make(map[string]toolsetDecl),
			luaTools: make(map[string]luaToolDecl), handlers: make(map[ask.Kind]*askHandler), gen: gen, checking: !apply}
		fail := func(err error) {
			r.dropOrigins(func(o int) bool { return o == gen })
			if apply {
				p := ConfigError{File: path, Error: err.Error()}
				if le, ok := err.(*Error); ok {
					// The file:line of an error whose value is not a
					// string (error({...})) is only in the traceback.
					p.Traceback = le.ShownTraceback()
				}
				r.bus.Emit("", "", p)
			}
			ch <- outcome{err: err}
		}
		fn, err := r.state.Load(strings.NewReader(src), chunk)
		if err != nil {
			fail(syntaxError(err))
			return
		}
		r.spawnWith(ctx, fn, nil, taskOptions{origin: gen, config: want, running: max(r.opts.ConfigBudget, 0)}, func(_ []lua.LValue, err error) {
			if err != nil && !(apply && !r.config.applied && errors.Is(err, ErrConfigBudget)) {
				fail(err)
				return
			}
			if !apply {
				r.dropOrigins(func(o int) bool { return o == gen })
				ch <- outcome{decls: want.list()}
				return
			}
			res := r.apply(want)
			r.config.applied = true
			r.dropOrigins(func(o int) bool { return o < gen })
			if err != nil { // stopped while starting: what it declared so far
				r.bus.Emit("", "", ConfigError{File: path, Error: err.Error(),
					Note: "the servers it declared before it was stopped are applied"})
			}
			r.bus.Emit("", "", ConfigApplied{File: path, Added: res.Added, Removed: res.Removed, Replaced: res.Replaced, Unchanged: res.Unchanged})
			ch <- outcome{res: res, err: err}
		})
	})
	if !ok {
		return ConfigResult{}, nil, errClosed
	}
	select {
	case o := <-ch:
		return o.res, o.decls, o.err
	case <-r.done:
		return ConfigResult{}, nil, errClosed
	}
}

// list returns the declarations in file order.
func (d *desired) list() []Declared {
	out := make([]Declared, 0, len(d.order))
	for _, key := range d.order {
		decl := d.servers[key]
		out = append(out, Declared{Name: decl.name, Spec: decl.spec, Where: decl.where})
	}
	return out
}

// apply makes the manager match want for the servers the config owns. It
// runs on the loop; manager calls return at once.
func (r *Runtime) apply(want *desired) ConfigResult {
	var res ConfigResult
	if want.serve != nil && want.serve.addr != "" && r.opts.Gateway != nil {
		r.opts.Gateway.Start()
	}
	prev, prevNames := r.config.servers, r.config.names
	next := make(map[string]manager.Spec, len(want.servers))
	names := make(map[string]string, len(want.servers))
	running := r.running()
	for _, key := range want.order {
		d := want.servers[key]
		next[key] = d.spec
		names[key] = d.name
		var cur manager.Spec
		err := errNotRunning
		if running[key] {
			cur, err = r.servers.Spec(d.name)
		}
		switch {
		case err != nil: // not running: new
			if err := r.servers.Add(d.name, d.spec); err != nil {
				r.opts.Logger.Error("config: cannot add server", "server", d.name, "error", err)
				continue
			}
			res.Added = append(res.Added, d.name)
		case cur.Equal(d.spec):
			res.Unchanged++
		default:
			// Replace: the old server is disposed first, so its removed
			// event comes before the new one's added (see finishReplacements).
			done, err := r.servers.Remove(d.name)
			if err != nil {
				continue
			}
			res.Replaced = append(res.Replaced, d.name)
			res.pending = append(res.pending, replacement{d.name, d.spec, done})
		}
	}
	for key := range prev {
		if _, ok := next[key]; ok || !running[key] {
			continue
		}
		if st, err := r.observer.Status(prevNames[key]); err == nil {
			if _, err := r.servers.Remove(prevNames[key]); err == nil {
				res.Removed = append(res.Removed, st.Name)
			}
		}
	}
	slices.Sort(res.Removed)
	r.config.servers, r.config.names = next, names
	res.serve = r.applyServe(want.serve)
	r.applyToolsets(want)
	r.applyBudgets(want)
	r.applyClientMode(want)
	r.applyLuaTools(want)
	r.applyAsk(want)
	return res
}

// errNotRunning stands for the manager's answer about a server it does not
// run, without asking it: that answer suggests the closest of all the
// names, which is work over every server.
var errNotRunning = errors.New("not running")

// running returns the name keys of the servers the manager runs now. A
// config asks about each server it declares; asking the manager about each
// one it does not know would make applying n new servers cost n times the
// whole set.
func (r *Runtime) running() map[string]bool {
	names := r.observer.Names()
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[manager.NameKey(n)] = true
	}
	return set
}

// declare is mcp_add inside a config evaluation: it records the server,
// rejecting a second declaration of one name with both places. from
// says where the declaration came from when not from the calling line
// (an imported file's entry), and is "" otherwise.
func (r *Runtime) declare(L *lua.LState, want *desired, name string, spec manager.Spec, from string) string {
	n, err := manager.NormalizeName(name)
	if err != nil {
		raiseCoded(L, &manager.Error{Code: manager.CodeInvalidConfig, Server: name, Op: "add", Err: err})
	}
	key := manager.NameKey(n)
	where := want.file
	if dbg, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("l", dbg, lua.LNil); err == nil {
			where = fmt.Sprintf("%s:%d", want.file, dbg.CurrentLine)
		}
	}
	if from != "" {
		where = fmt.Sprintf("%s (mcp_import at %s)", from, where)
	}
	for _, tool := range want.luaTools {
		if manager.NameKey(tool.server) == key {
			L.RaiseError("INVALID_CONFIG: server %q is the server of mcp_tool %q (at %s); give one of them another name", n, tool.name, tool.where)
		}
	}
	if prev, dup := want.servers[key]; dup {
		L.RaiseError("INVALID_CONFIG: server %q is declared twice in %s (first at %s); each name may be declared once", n, want.file, prev.where)
	}
	want.servers[key] = declaration{name: n, spec: spec, where: where}
	want.order = append(want.order, key)
	return n
}

// nonNil keeps event lists lists: a nil slice would be JSON null, and
// nil in Lua.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// pendingServer returns the server that name (a server, or "server.tool")
// refers to if the config file being evaluated by L's task declares it but
// the manager does not run it yet: such a server starts only once the file
// has run to its end.
func (r *Runtime) pendingServer(L *lua.LState, name string) (string, bool) {
	t, ok := r.tasks[L]
	if !ok || t.config == nil {
		return "", false
	}
	server, _, _ := strings.Cut(strings.TrimSpace(name), ".")
	d, declared := t.config.servers[manager.NameKey(server)]
	if !declared {
		return "", false
	}
	if _, err := r.observer.Status(d.name); err == nil {
		return "", false // running already (declared by the previous evaluation)
	}
	return d.name, true
}

// pendingError explains why a server declared in this file cannot be used
// while the file runs.
func pendingError(server, op string) error {
	return &manager.Error{Code: manager.CodeConnectionFailed, Server: server, Op: op,
		Err: fmt.Errorf("declared in this file, it starts once the file has run to its end; use it from a hook: mcp_on(\"connected\", function(e) ... end, {server = %q})", server)}
}

// applyServe asks for the listener the config declares when it differs
// from the one the last config declared: the same address and token file
// again changes nothing, none stops listening.
func (r *Runtime) applyServe(want *serveDecl) *pendingServe {
	prev := r.config.serve
	r.config.serve = want
	if r.opts.Gateway == nil || sameServe(prev, want) {
		return nil
	}
	d := serveDecl{} // stop
	if want != nil {
		d = *want
	}
	return &pendingServe{decl: d, reply: r.listener.request(d)}
}

func sameServe(a, b *serveDecl) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.addr == b.addr && a.tokenFile == b.tokenFile
}
