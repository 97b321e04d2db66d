package luaapi_test

// The config file as the source of truth for the servers it declares:
// LoadConfig, LoadConfigSource and CheckConfig. What a reload touched is
// read from the bus (added and removed events per server) and from the dial
// (connection attempts per server): an untouched server has neither.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// dialCounter counts connection attempts per server.
type dialCounter struct {
	mu sync.Mutex
	// mu guards n.
	n map[string]int
}

func (d *dialCounter) get(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[name]
}

func (d *dialCounter) snapshot() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int, len(d.n))
	for k, v := range d.n {
		out[k] = v
	}
	return out
}

// countingDial is inMemoryDemoDial that counts attempts per server.
func countingDial(t testing.TB) (manager.DialFunc, *dialCounter) {
	demoDial := inMemoryDemoDial(t)
	c := &dialCounter{n: make(map[string]int)}
	return func(ctx context.Context, server string, spec manager.Spec) (mcp.Transport, error) {
		c.mu.Lock()
		c.n[server]++
		c.mu.Unlock()
		return demoDial(ctx, server, spec)
	}, c
}

// configRuntime is a hook runtime whose servers are counted in-memory demo
// servers, with a config file path in a temporary directory.
type configRuntime struct {
	*hookRuntime
	dials *dialCounter
	path  string
}

func newConfigRuntime(t *testing.T) *configRuntime {
	t.Helper()
	dial, dials := countingDial(t)
	return &configRuntime{hookRuntime: newHookRuntime(t, 0, dial), dials: dials, path: filepath.Join(t.TempDir(), "startup.lua")}
}

func (c *configRuntime) load(t *testing.T, src string) (luaapi.ConfigResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	return c.LoadConfigSource(ctx, c.path, src)
}

// connected waits until every server is connected.
func (c *configRuntime) connected(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		c.run(t, fmt.Sprintf(`assert(mcp_wait(%q, "connected"))`, n))
	}
}

// await returns the first event at index from or later of h.bus.seen that
// ok accepts, receiving more events if needed.
func (w *busWatch) await(t testing.TB, from int, what string, ok func(events.Event) bool) int {
	t.Helper()
	for i := from; i < len(w.seen); i++ {
		if ok(w.seen[i]) {
			return i
		}
	}
	w.next(t, what, ok)
	return len(w.seen) - 1
}

// lifecycle returns, per server, the added and removed events among
// events, in order.
func lifecycle(es []events.Event) map[string][]string {
	out := map[string][]string{}
	for _, e := range es {
		if e.Kind == events.KindAdded || e.Kind == events.KindRemoved {
			out[e.Server] = append(out[e.Server], string(e.Kind))
		}
	}
	return out
}

// decl is an mcp_add line of a demo server; variant makes a different spec.
func decl(name, variant string) string {
	if variant == "" {
		return fmt.Sprintf("mcp_add(%q, {command = {\"demo\"}})\n", name)
	}
	return fmt.Sprintf("mcp_add(%q, {command = {\"demo\", %q}})\n", name, variant)
}

// manyServers is a config that declares n servers s0001…; server changed
// (1-based) has variant as an argument, which makes its spec differ.
func manyServers(n, changed, variant int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		arg := "0"
		if i == changed {
			arg = fmt.Sprint(variant)
		}
		fmt.Fprintf(&b, "mcp_add(\"s%04d\", {command = {\"server\", %q}})\n", i, arg)
	}
	return b.String()
}

// TestConfigReloadAppliesOnlyTheDifference: a first config is applied,
// then a second; exactly the servers whose declaration changed are
// touched, and servers added at the REPL are kept.
func TestConfigReloadAppliesOnlyTheDifference(t *testing.T) {
	tests := []struct {
		name          string
		first, second string
		repl          []string // servers added at the REPL in between
		added         []string
		removed       []string
		replaced      []string
		unchanged     int
		final         []string
	}{
		{
			name:      "identical file",
			first:     decl("a", "") + decl("b", ""),
			second:    decl("a", "") + decl("b", ""),
			unchanged: 2,
			final:     []string{"a", "b"},
		},
		{
			name:      "same declarations, other code and order",
			first:     decl("a", "") + decl("b", ""),
			second:    "-- reordered\nlocal unused = 1\n" + decl("b", "") + decl("A", ""),
			unchanged: 2,
			final:     []string{"a", "b"},
		},
		{
			name:      "changed spec is replaced",
			first:     decl("a", "") + decl("b", ""),
			second:    decl("a", "") + decl("b", "v2"),
			replaced:  []string{"b"},
			unchanged: 1,
			final:     []string{"a", "b"},
		},
		{
			name:      "changed option is replaced",
			first:     decl("a", "") + `mcp_add("b", {command = {"demo"}, timeouts = {request = "5s"}})` + "\n",
			second:    decl("a", "") + `mcp_add("b", {command = {"demo"}, timeouts = {request = 6}})` + "\n",
			replaced:  []string{"b"},
			unchanged: 1,
			final:     []string{"a", "b"},
		},
		{
			name:      "equal spec written differently is unchanged",
			first:     `mcp_add("a", {command = {"demo"}, timeouts = {request = "5s"}})` + "\n",
			second:    `mcp_add("a", {command = {"demo"}, timeouts = {request = 5}, enabled = true})` + "\n",
			unchanged: 1,
			final:     []string{"a"},
		},
		{
			name:      "gone from the file is removed",
			first:     decl("a", "") + decl("b", "") + decl("c", ""),
			second:    decl("a", ""),
			removed:   []string{"b", "c"},
			unchanged: 1,
			final:     []string{"a"},
		},
		{
			name:      "new in the file is added",
			first:     decl("a", ""),
			second:    decl("a", "") + decl("c", "") + decl("b", ""),
			added:     []string{"c", "b"},
			unchanged: 1,
			final:     []string{"a", "b", "c"},
		},
		{
			name:      "all at once",
			first:     decl("keep", "") + decl("change", "") + decl("drop", ""),
			second:    decl("new", "") + decl("change", "v2") + decl("keep", ""),
			added:     []string{"new"},
			removed:   []string{"drop"},
			replaced:  []string{"change"},
			unchanged: 1,
			final:     []string{"change", "keep", "new"},
		},
		{
			name:      "servers added at the REPL are kept",
			first:     decl("a", "") + decl("b", ""),
			repl:      []string{"r1", "r2"},
			second:    decl("a", ""),
			removed:   []string{"b"},
			unchanged: 1,
			final:     []string{"a"},
		},
		{
			name:      "empty file removes what the file declared, not the REPL's",
			first:     decl("a", ""),
			repl:      []string{"r1"},
			second:    "-- nothing here\n",
			removed:   []string{"a"},
			unchanged: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConfigRuntime(t)
			res, err := c.load(t, tt.first)
			require.NoError(t, err)
			firstNames := res.Added
			c.connected(t, firstNames...)
			for _, n := range tt.repl {
				c.addDemo(t, n)
			}
			final := append(slices.Clone(tt.final), tt.repl...)
			slices.Sort(final)

			before := c.dials.snapshot()
			connectedAt := map[string]string{}
			for _, n := range append(slices.Clone(firstNames), tt.repl...) {
				connectedAt[n] = c.one(t, fmt.Sprintf(`return mcp_status(%q).connected_at`, n))
			}
			c.flush(t)
			from := len(c.bus.seen)

			res, err = c.load(t, tt.second)
			require.NoError(t, err)
			require.Equal(t, tt.added, res.Added, "added")
			require.Equal(t, tt.removed, res.Removed, "removed")
			require.Equal(t, tt.replaced, res.Replaced, "replaced")
			require.Equal(t, tt.unchanged, res.Unchanged, "unchanged")

			// Wait for what must happen: removals are asynchronous; a
			// replaced server is removed, then added and connected again.
			for _, n := range tt.removed {
				c.bus.await(t, from, n+" removed", func(e events.Event) bool { return e.Kind == events.KindRemoved && e.Server == n })
			}
			for _, n := range tt.replaced {
				rm := c.bus.await(t, from, n+" removed", func(e events.Event) bool { return e.Kind == events.KindRemoved && e.Server == n })
				c.bus.await(t, rm, n+" added again", func(e events.Event) bool { return e.Kind == events.KindAdded && e.Server == n })
			}
			c.connected(t, final...)
			applied := c.bus.await(t, from, "config_applied", kindIs(events.KindConfigApplied))
			c.flush(t)

			// Exactly these servers were touched, in this order.
			want := map[string][]string{}
			for _, n := range tt.added {
				want[n] = []string{"added"}
			}
			for _, n := range tt.removed {
				want[n] = []string{"removed"}
			}
			for _, n := range tt.replaced {
				want[n] = []string{"removed", "added"}
			}
			require.Equal(t, want, lifecycle(c.bus.seen[from:]), "added/removed events per server")
			for name, n := range c.dials.snapshot() {
				switch {
				case slices.Contains(tt.added, name):
					require.Equal(t, 1, n, "connection attempts of new server %s", name)
				case slices.Contains(tt.replaced, name):
					require.Equal(t, before[name]+1, n, "connection attempts of replaced server %s", name)
				default:
					require.Equal(t, before[name], n, "connection attempts of untouched server %s", name)
				}
			}
			for n, at := range connectedAt {
				if slices.Contains(final, n) && !slices.Contains(tt.replaced, n) {
					require.Equal(t, at, c.one(t, fmt.Sprintf(`return mcp_status(%q).connected_at`, n)), "session of %s", n)
				}
			}
			servers := c.one(t, `return table.concat(mcp_servers(), ",")`)
			require.Equal(t, strings.Join(final, ","), servers)

			// config_applied says the same as the result.
			e := c.bus.seen[applied]
			require.Equal(t, c.path, e.Text("file"))
			for key, want := range map[string][]string{"added": tt.added, "removed": tt.removed, "replaced": tt.replaced} {
				got, _ := e.Fields[key].([]string)
				require.Equal(t, len(want), len(got), "config_applied %s: %v", key, e.Fields[key])
				for i := range want {
					require.Equal(t, want[i], got[i], "config_applied %s", key)
				}
			}
			require.Equal(t, int64(tt.unchanged), e.Int("unchanged"))
		})
	}
}

// TestBrokenConfigChangesNothing: an edit that fails — syntax, runtime,
// validation, a name declared twice — touches no server, keeps the old
// file's hooks and timers (the broken file's are never active) and
// publishes config_error with file:line.
func TestBrokenConfigChangesNothing(t *testing.T) {
	const first = `mcp_add("a", {command = {"demo"}})
mcp_add("b", {command = {"demo"}})
mcp_on("notification", function(e) print("v1 hook " .. e.i) end, {server = "s"})
`
	// Every broken edit also declares a new server, changes one and drops
	// one, and registers a hook and a timer before it fails.
	const prefix = `mcp_add("a", {command = {"demo", "v2"}})
mcp_add("new", {command = {"demo"}})
mcp_on("notification", function(e) print("v2 hook " .. e.i) end, {server = "s"})
mcp_every(0.01, function() print("v2 timer") end)
`
	tests := []struct {
		name, second string
		want         string // in the error and in config_error
		syntax       bool
	}{
		{"syntax error", prefix + "local x = = 1\n", "startup.lua:5:11: near '='", true},
		{"unfinished chunk", prefix + "for i = 1, 2 do\n", "startup.lua:", true},
		{"runtime error", prefix + `error("x")` + "\n", "startup.lua:5: x", false},
		{"runtime error in a function", prefix + "local function f()\n  return nil .. 'x'\nend\nf()\n", "startup.lua:6: ", false},
		{"error value", prefix + "error({code = 1})\n", "error object: {", false}, // position in the traceback
		{"invalid spec", prefix + `mcp_add("b", {comand = {"demo"}})` + "\n", `startup.lua:5: INVALID_CONFIG: server "b"`, false},
		{"invalid name", prefix + `mcp_add("b.c", {command = {"demo"}})` + "\n", "startup.lua:5: INVALID_CONFIG", false},
		{"duplicate name", prefix + `mcp_add("new", {command = {"demo"}})` + "\n",
			`startup.lua:5: INVALID_CONFIG: server "new" is declared twice in startup.lua (first at startup.lua:2)`, false},
		{"duplicate name, other case", prefix + `mcp_add("NEW", {command = {"demo", "x"}})` + "\n",
			`startup.lua:5: INVALID_CONFIG: server "NEW" is declared twice in startup.lua (first at startup.lua:2)`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConfigRuntime(t)
			_, err := c.load(t, first)
			require.NoError(t, err)
			c.connected(t, "a", "b")
			before := c.dials.snapshot()
			c.flush(t)
			from := len(c.bus.seen)

			_, err = c.load(t, tt.second)
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			var le *luaapi.Error
			require.ErrorAs(t, err, &le)
			require.Equal(t, tt.syntax, le.Syntax)
			e := c.bus.seen[c.bus.await(t, from, "config_error", kindIs(events.KindConfigError))]
			require.Equal(t, c.path, e.Text("file"))
			require.Contains(t, e.Text("error"), tt.want)
			if !tt.syntax {
				// Where it failed, even for an error value without a
				// position (then in the traceback, which is left out
				// when it only repeats the message's file:line).
				require.Contains(t, e.Text("error")+" "+e.Text("traceback"), "startup.lua:")
			}

			// The old hook runs, the broken file's hook does not; its timer
			// never fires (a later one-shot timer bounds the wait).
			c.publish("s", events.Fields{"i": 1})
			c.run(t, `mcp_after(0.1, function() print("waited") end)`)
			c.lines.waitLine(t, 0, "waited")
			c.flush(t)
			require.Equal(t, 1, c.lines.count(0, "v1 hook 1"))
			require.Equal(t, 0, c.lines.count(0, "v2 hook 1"))
			require.Equal(t, 0, c.lines.count(0, "v2 timer"))

			// No server touched.
			require.Empty(t, lifecycle(c.bus.seen[from:]))
			for _, e := range c.bus.seen[from:] {
				require.NotEqual(t, events.KindConfigApplied, e.Kind)
			}
			require.Equal(t, before, c.dials.snapshot())
			require.Equal(t, "a,b", c.one(t, `return table.concat(mcp_servers(), ",")`))

			// The last good config is still the reference: reloading it
			// touches nothing, and a good edit applies against it.
			res, err := c.load(t, first)
			require.NoError(t, err)
			require.Equal(t, 2, res.Unchanged)
			require.Empty(t, res.Added)
			res, err = c.load(t, `mcp_add("a", {command = {"demo"}})`)
			require.NoError(t, err)
			require.Equal(t, []string{"b"}, res.Removed)
		})
	}
}

// TestReloadReplacesFileHooksAndTimers: the previous file's hooks and
// timers are gone after a reload and the new file's are active, while
// hooks and timers added at the REPL stay.
func TestReloadReplacesFileHooksAndTimers(t *testing.T) {
	c := newConfigRuntime(t)
	_, err := c.load(t, `
mcp_on("notification", function(e) print("v1 hook " .. e.i) end, {server = "s"})
mcp_every(0.01, function() print("v1 timer") end)
mcp_after(0.2, function() print("v1 after") end)
print("v1 loaded")`)
	require.NoError(t, err)
	c.run(t, `mcp_on("notification", function(e) print("repl hook " .. e.i) end, {server = "s"})
		mcp_every(0.01, function() print("repl timer") end)`)
	c.lines.waitLine(t, 0, "v1 timer")
	c.publish("s", events.Fields{"i": 1})
	c.lines.waitLine(t, 0, "repl hook 1")
	require.Equal(t, 1, c.lines.count(0, "v1 hook 1"))

	_, err = c.load(t, `
mcp_on("notification", function(e) print("v2 hook " .. e.i) end, {server = "s"})
mcp_every(0.01, function() print("v2 timer") end)
print("v2 loaded")`)
	require.NoError(t, err)
	// The evaluation, the apply and dropping the old file's hooks and timers
	// are one turn of the loop: nothing of v1 can run after "v2 loaded".
	loaded := c.lines.waitLine(t, 0, "v2 loaded")
	c.publish("s", events.Fields{"i": 2})
	c.lines.waitLine(t, loaded, "v2 hook 2")
	after := c.lines.waitLine(t, loaded, "repl hook 2")
	c.lines.waitLine(t, after, "repl timer")
	c.lines.waitLine(t, after, "v2 timer")
	// Past the moment v1's one-shot timer would have fired.
	c.run(t, `mcp_after(0.25, function() print("waited") end)`)
	c.lines.waitLine(t, loaded, "waited")
	c.flush(t)
	for _, l := range c.lines.all()[loaded:] {
		require.False(t, strings.HasPrefix(l, "v1 "), "v1 still active after the reload: %q", l)
	}

	// A file that stops registering hooks leaves none of its own.
	_, err = c.load(t, `print("v3 loaded")`)
	require.NoError(t, err)
	v3 := c.lines.waitLine(t, 0, "v3 loaded")
	c.publish("s", events.Fields{"i": 3})
	c.lines.waitLine(t, v3, "repl hook 3")
	c.run(t, `mcp_after(0.05, function() print("waited again") end)`)
	c.lines.waitLine(t, v3, "waited again")
	for _, l := range c.lines.all()[v3:] {
		require.False(t, strings.HasPrefix(l, "v2 "), "v2 still active after the reload: %q", l)
	}
}

// TestCheckConfig: CheckConfig returns the declarations with file:line and
// applies nothing: no server, no event, no dial, no hook, and the applied
// config stays the reference for the next reload.
func TestCheckConfig(t *testing.T) {
	c := newConfigRuntime(t)
	_, err := c.load(t, decl("a", "")+decl("b", "")+`mcp_on("notification", function(e) print("loaded hook " .. e.i) end, {server = "s"})`)
	require.NoError(t, err)
	c.connected(t, "a", "b")
	before := c.dials.snapshot()
	c.flush(t)
	from := len(c.bus.seen)

	ctx := context.Background()
	decls, err := c.CheckConfig(ctx, c.path, `-- a config
mcp_add("git", {command = {"git-mcp", "--repo", "."}})
local function web(name, port)
  return mcp_add(name, {url = "http://127.0.0.1:" .. port .. "/mcp"})
end
web("web", 3001)
mcp_add("off", {command = {"x"}, enabled = false})
mcp_on("notification", function(e) print("checked hook " .. e.i) end, {server = "s"})
mcp_every(0.01, function() print("checked timer") end)`)
	require.NoError(t, err)
	type row struct{ name, transport, endpoint, where string }
	var got []row
	for _, d := range decls {
		got = append(got, row{d.Name, string(d.Spec.Transport), d.Spec.Endpoint(), d.Where})
	}
	require.Equal(t, []row{
		{"git", "stdio", "git-mcp --repo .", "startup.lua:2"},
		{"web", "http", "http://127.0.0.1:3001/mcp", "startup.lua:4"},
		{"off", "stdio", "x", "startup.lua:7"},
	}, got)
	require.True(t, decls[2].Spec.Disabled)

	// Errors as LoadConfig reports them, without a config_error.
	_, err = c.CheckConfig(ctx, c.path, decl("x", "")+decl("X", ""))
	require.ErrorContains(t, err, `startup.lua:2: INVALID_CONFIG: server "X" is declared twice in startup.lua (first at startup.lua:1)`)
	_, err = c.CheckConfig(ctx, c.path, "x = = 1")
	require.ErrorContains(t, err, "startup.lua:1:")

	c.publish("s", events.Fields{"i": 1})
	c.run(t, `mcp_after(0.05, function() print("waited") end)`)
	c.lines.waitLine(t, 0, "waited")
	c.flush(t)
	require.Equal(t, 1, c.lines.count(0, "loaded hook 1"), "the loaded file's hook is still active")
	require.Equal(t, 0, c.lines.count(0, "checked hook 1"))
	require.Equal(t, 0, c.lines.count(0, "checked timer"))
	require.Empty(t, lifecycle(c.bus.seen[from:]))
	for _, e := range c.bus.seen[from:] {
		require.NotContains(t, []events.Kind{events.KindConfigApplied, events.KindConfigError}, e.Kind)
	}
	require.Equal(t, before, c.dials.snapshot())
	require.Equal(t, "a,b", c.one(t, `return table.concat(mcp_servers(), ",")`))

	// Reloading the applied file touches nothing: the check did not
	// replace it as the reference.
	res, err := c.load(t, decl("a", "")+decl("b", ""))
	require.NoError(t, err)
	require.Equal(t, 2, res.Unchanged)
	require.Empty(t, res.Added)
	require.Empty(t, res.Removed)
}

// TestLoadConfigFile: LoadConfig reads the file; a missing file is a
// config_error that changes nothing.
func TestLoadConfigFile(t *testing.T) {
	c := newConfigRuntime(t)
	require.NoError(t, os.WriteFile(c.path, []byte(decl("a", "")), 0o600))
	ctx := context.Background()
	res, err := c.LoadConfig(ctx, c.path)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, res.Added)
	c.connected(t, "a")
	c.flush(t)
	from := len(c.bus.seen)

	missing := filepath.Join(filepath.Dir(c.path), "missing.lua")
	_, err = c.LoadConfig(ctx, missing)
	require.ErrorIs(t, err, os.ErrNotExist)
	e := c.bus.seen[c.bus.await(t, from, "config_error", kindIs(events.KindConfigError))]
	require.Equal(t, missing, e.Text("file"))
	require.Contains(t, e.Text("error"), "missing.lua")
	require.Equal(t, "a", c.one(t, `return table.concat(mcp_servers(), ",")`))
	require.Equal(t, 1, c.dials.get("a"))

	// Lua errors keep their type through LoadConfig.
	require.NoError(t, os.WriteFile(c.path, []byte("\nerror('boom')"), 0o600))
	_, err = c.LoadConfig(ctx, c.path)
	var le *luaapi.Error
	require.True(t, errors.As(err, &le), "%T %v", err, err)
	require.Equal(t, "startup.lua:2: boom", le.Message)
}

// TestReloadDropsWhatTheFilesCallbacksRegistered: hooks and timers that
// the file's own hooks and timers register belong to the file as well, so
// a reload drops them too; those registered from the REPL's callbacks stay.
func TestReloadDropsWhatTheFilesCallbacksRegistered(t *testing.T) {
	c := newConfigRuntime(t)
	_, err := c.load(t, `
mcp_after(0, function()
  mcp_every(0.01, function() print("v1 nested timer") end)
end)
mcp_on("notification", function(e)
  if e.i == 1 then
    mcp_on("notification", function(e) print("v1 nested hook " .. e.i) end, {server = "s"})
  end
end, {server = "s"})`)
	require.NoError(t, err)
	c.run(t, `mcp_after(0, function() mcp_every(0.01, function() print("repl nested timer") end) end)`)
	c.lines.waitLine(t, 0, "v1 nested timer")
	c.publish("s", events.Fields{"i": 1})
	c.publish("s", events.Fields{"i": 2})
	c.lines.waitLine(t, 0, "v1 nested hook 2")

	_, err = c.load(t, `print("v2 loaded")`)
	require.NoError(t, err)
	loaded := c.lines.waitLine(t, 0, "v2 loaded")
	c.publish("s", events.Fields{"i": 3})
	c.run(t, `mcp_after(0.1, function() print("waited") end)`)
	c.lines.waitLine(t, loaded, "waited")
	c.flush(t)
	c.lines.waitLine(t, loaded, "repl nested timer")
	for _, l := range c.lines.all()[loaded:] {
		require.False(t, strings.HasPrefix(l, "v1 "), "registered by v1's callbacks, still active after the reload: %q", l)
	}
}
