package luaapi_test

// Hooks, timers and callbacks (mcp_on, mcp_off, mcp_after, mcp_every,
// sleep, mcp_call_cb) on the one Lua loop, and hooks that fail, never
// yield or do non-interruptible work: each is stopped and reported, and
// the host stays responsive.
// Everything here waits on what the loop produces — printed lines, bus
// events — never on the clock; deadlines are generous bounds for hangs.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// waitDeadline bounds every wait for something the loop does; reaching it
// means a hang, not slowness.
const waitDeadline = 10 * time.Second

// printedLines is the Stdout of hook tests: each print is one line, in the
// order the loop printed them (print runs on the loop), and tests wait for
// lines rather than sleep.
type printedLines struct {
	mu sync.Mutex
	// mu guards the following.
	lines   []string
	partial []byte
	changed chan struct{} // closed and replaced when a line is added
}

func (p *printedLines) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	added := false
	for {
		i := strings.IndexByte(string(p.partial), '\n')
		if i < 0 {
			break
		}
		p.lines = append(p.lines, string(p.partial[:i]))
		p.partial = p.partial[i+1:]
		added = true
	}
	if added && p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
	return len(b), nil
}

// snapshot returns the lines so far and a channel closed at the next one.
func (p *printedLines) snapshot() ([]string, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.changed == nil {
		p.changed = make(chan struct{})
	}
	return append([]string(nil), p.lines...), p.changed
}

// all returns the lines printed so far.
func (p *printedLines) all() []string {
	lines, _ := p.snapshot()
	return lines
}

// wait waits for a line at index from or later that ok accepts and returns
// its index.
func (p *printedLines) wait(t testing.TB, from int, what string, ok func(string) bool) int {
	t.Helper()
	deadline := time.NewTimer(waitDeadline)
	defer deadline.Stop()
	for {
		lines, changed := p.snapshot()
		for i := from; i < len(lines); i++ {
			if ok(lines[i]) {
				return i
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("%s: not printed within %v; printed:\n%s", what, waitDeadline, strings.Join(lines, "\n"))
		}
	}
}

// waitLine waits for the exact line want at index from or later.
func (p *printedLines) waitLine(t testing.TB, from int, want string) int {
	t.Helper()
	return p.wait(t, from, fmt.Sprintf("line %q", want), func(l string) bool { return l == want })
}

// count returns how many lines from index from on equal want.
func (p *printedLines) count(from int, want string) int {
	n := 0
	for i, l := range p.all() {
		if i >= from && l == want {
			n++
		}
	}
	return n
}

// busWatch is a test's own subscription to the bus: it keeps every event
// it has received so tests can assert on what came, and in which order.
type busWatch struct {
	sub  *events.Subscription
	seen []events.Event
}

func watchBus(t testing.TB, bus *events.Bus) *busWatch {
	w := &busWatch{sub: bus.Subscribe(events.SubscribeOptions{QueueSize: 1 << 16})}
	t.Cleanup(w.sub.Close)
	return w
}

// next waits for the next event that ok accepts, keeping every event
// received on the way.
func (w *busWatch) next(t testing.TB, what string, ok func(events.Event) bool) events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	for {
		e, err := w.sub.Recv(ctx)
		if err != nil {
			t.Fatalf("%s: no such event within %v (%v); seen:\n%s", what, waitDeadline, err, formatEvents(w.seen))
		}
		require.NotEqual(t, events.KindLagged, e.Kind, "the test's subscription lagged")
		w.seen = append(w.seen, e)
		if ok(e) {
			return e
		}
	}
}

// drain takes what is queued without waiting.
func (w *busWatch) drain(t testing.TB) {
	t.Helper()
	for {
		e, ok, err := w.sub.TryRecv()
		require.NoError(t, err)
		if !ok {
			return
		}
		w.seen = append(w.seen, e)
	}
}

// of returns the events seen so far that ok accepts.
func (w *busWatch) of(ok func(events.Event) bool) []events.Event {
	var out []events.Event
	for _, e := range w.seen {
		if ok(e) {
			out = append(out, e)
		}
	}
	return out
}

func formatEvents(es []events.Event) string {
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Format() + "\n")
	}
	return b.String()
}

func kindIs(k events.Kind) func(events.Event) bool {
	return func(e events.Event) bool { return e.Kind == k }
}

// hookRuntime is a test runtime whose print output is line-addressable,
// whose log is kept, and with the test's own view of the bus.
type hookRuntime struct {
	*testRuntime
	lines   *printedLines
	logs    *testutil.SyncBuffer
	bus     *busWatch
	markers int
}

// newHookRuntime builds a runtime over the in-memory demo server (or
// dial). A zero budget keeps the default slice budget.
func newHookRuntime(t testing.TB, budget time.Duration, dial manager.DialFunc) *hookRuntime {
	t.Helper()
	lines := &printedLines{}
	logs := &testutil.SyncBuffer{}
	r := newTestRuntime(t, dial, func(o *luaapi.Options) {
		o.Stdout = lines
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.SliceBudget = budget
	})
	h := &hookRuntime{testRuntime: r, lines: lines, logs: logs, bus: watchBus(t, r.m.Bus())}
	// The marker hook: flush publishes an event only it prints.
	r.run(t, `mcp_on("notification", function(e) print("marker " .. e.marker) end, {server = "marker"})`)
	return h
}

// publish puts a notification for server on the bus, as a server's
// notification would come.
func (h *hookRuntime) publish(server string, fields events.Fields) events.Event {
	if fields == nil {
		fields = events.Fields{}
	}
	if _, ok := fields["method"]; !ok {
		fields["method"] = "test/ping"
	}
	return h.m.Bus().Publish(events.KindNotification, server, fields)
}

// flush publishes a marker and waits until the marker hook has printed it.
// The loop dispatches events in bus order, so every event published before
// the marker has been dispatched by then, and hooks that did not suspend
// have finished, and what they published is in h.bus. (Events those hooks
// caused, such as their hook_error, come after the marker on the bus:
// flush again to get them dispatched too.)
func (h *hookRuntime) flush(t testing.TB) {
	t.Helper()
	h.markers++
	h.publish("marker", events.Fields{"marker": h.markers})
	h.lines.waitLine(t, 0, fmt.Sprintf("marker %d", h.markers))
	h.bus.drain(t)
}

// hookError waits for the next hook_error event of the hook whose handle
// id is id.
func (h *hookRuntime) hookError(t testing.TB, id int) events.Event {
	t.Helper()
	return h.bus.next(t, fmt.Sprintf("hook_error of hook %d", id), func(e events.Event) bool {
		return e.Kind == events.KindHookError && e.Int("hook_id") == int64(id)
	})
}

// id registers a hook or timer with src (an expression evaluating to a
// handle) and returns the handle's id.
func (h *hookRuntime) id(t testing.TB, src string) int {
	t.Helper()
	var id int
	_, err := fmt.Sscan(h.one(t, `return (`+src+`).id`), &id)
	require.NoError(t, err)
	return id
}

// printCounter is a Stdout for benchmarks: it counts prints and signals
// each on ch without ever blocking the loop (a full ch drops the signal).
type printCounter struct {
	n  atomic.Int64
	ch chan struct{}
}

func (p *printCounter) Write(b []byte) (int, error) {
	p.n.Add(1)
	select {
	case p.ch <- struct{}{}:
	default:
	}
	return len(b), nil
}

// newPrintCountingRuntime is a test runtime whose prints are counted.
func newPrintCountingRuntime(t testing.TB) (*testRuntime, *printCounter) {
	pc := &printCounter{ch: make(chan struct{}, 1)}
	return newTestRuntime(t, nil, func(o *luaapi.Options) { o.Stdout = pc }), pc
}

// publishNotification publishes a notification of server on r's bus.
func publishNotification(r *testRuntime, server string, i int) {
	r.m.Bus().Publish(events.KindNotification, server, events.Fields{"i": i})
}

// TestHookGetsEventTable: the hook gets the event as a table with seq,
// kind, server, time and the fields at top level; the handle names it.
func TestHookGetsEventTable(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	require.Equal(t, []string{"true", "number", `mcp_on("notification")#2`, `mcp_on("notification")`}, h.run(t, `
		h1 = mcp_on("notification", function(e)
			print(string.format("got seq=%d kind=%s server=%s method=%s i=%d tags=%s nested=%s time=%s",
				e.seq, e.kind, e.server, e.method, e.i, table.concat(e.tags, "+"), e.nested.k,
				tostring(e.time:match("^%d%d%d%d%-%d%d%-%d%dT") ~= nil)))
		end)
		return mcp.on == mcp_on, type(h1.id), tostring(h1), h1.what`))
	e := h.publish("alpha", events.Fields{"i": 7, "tags": []string{"a", "b"}, "nested": map[string]any{"k": "v"}})
	h.lines.waitLine(t, 0, fmt.Sprintf("got seq=%d kind=notification server=alpha method=test/ping i=7 tags=a+b nested=v time=true", e.Seq))
}

// TestHookSeesWhatServersSay: what a server says reaches the manager's
// notices, not its bus; a "notification" hook still gets it as the same
// table, method and params as the server sent them, with server, kind and
// time (and client, for a client's own session).
func TestHookSeesWhatServersSay(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	h.run(t, `mcp_on("notification", function(e)
		local p = e.params or {}
		print(string.format("%s %s %s %s %s %s %s", e.kind, e.server, e.method, tostring(p.level), tostring(p.data or p.uri),
			tostring(e.client), tostring(e.time:match("^%d%d%d%d%-%d%d%-%d%dT") ~= nil)))
	end)`)
	notes := h.m.Notices()
	now := time.Now()
	notes.Publish(context.Background(), notify.LogMessage{Origin: notify.Origin{Server: "git", Time: now}, Level: "warning", Logger: "db", Data: "slow"})
	at := h.lines.waitLine(t, 0, "notification git notifications/message warning slow nil true")
	notes.Publish(context.Background(), notify.ResourceUpdated{Origin: notify.Origin{Server: "git", Client: "c (1)", Time: now}, URI: "git://log"})
	h.lines.waitLine(t, at+1, "notification git notifications/resources/updated nil git://log c (1) true")
}

// TestHookFilters: kind, "*" and the server option (case-insensitive)
// select the events a hook gets.
func TestHookFilters(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	h.run(t, `
		mcp_on("notification", function(e) print("kind " .. e.server .. " " .. e.kind) end)
		mcp_on("*", function(e) if e.server ~= "marker" then print("star " .. e.server .. " " .. e.kind) end end)
		mcp_on("notification", function(e) print("alpha-only " .. e.server) end, {server = "ALPHA"})
		mcp_on("backoff", function(e) print("backoff " .. e.server) end)`)
	h.publish("alpha", nil)
	h.publish("beta", nil)
	h.m.Bus().Publish(events.KindBackoff, "Alpha", events.Fields{"attempt": 1})
	h.flush(t)
	var got []string
	for _, l := range h.lines.all() {
		if !strings.HasPrefix(l, "marker") && !strings.HasPrefix(l, "kind marker") {
			got = append(got, l)
		}
	}
	require.Equal(t, []string{
		// In registration order per event, events in bus order.
		"kind alpha notification", "star alpha notification", "alpha-only alpha",
		"kind beta notification", "star beta notification",
		"star Alpha backoff", "backoff Alpha",
	}, got)
}

func TestMcpOff(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	h.run(t, `hk = mcp_on("notification", function(e) print("hook " .. e.i) end, {server = "s"})`)
	h.publish("s", events.Fields{"i": 1})
	h.lines.waitLine(t, 0, "hook 1")

	require.Equal(t, []string{"true", "false"}, h.run(t, `return mcp_off(hk), mcp.off(hk)`))
	h.publish("s", events.Fields{"i": 2})
	h.flush(t)
	require.Equal(t, 0, h.lines.count(0, "hook 2"), "an mcp_off'd hook never runs again")

	// A handle's id works as well; unknown ids give false.
	id := h.id(t, `mcp_on("notification", function(e) print("by id " .. e.i) end, {server = "s"})`)
	require.Equal(t, []string{"true", "false"}, h.run(t, fmt.Sprintf(`return mcp_off(%d), mcp_off(12345)`, id)))
	h.publish("s", events.Fields{"i": 3})
	h.flush(t)
	require.Equal(t, 0, h.lines.count(0, "by id 3"))

	le := h.fail(t, `mcp_off("nope")`)
	require.Contains(t, le.Message, "handle expected")

	// A hook may turn itself off: it runs once.
	h.run(t, `local me; me = mcp_on("notification", function(e) print("once " .. e.i) mcp_off(me) end, {server = "s"})`)
	h.publish("s", events.Fields{"i": 4})
	h.publish("s", events.Fields{"i": 5})
	h.flush(t)
	require.Equal(t, 1, h.lines.count(0, "once 4"))
	require.Equal(t, 0, h.lines.count(0, "once 5"))
}

func TestMcpOnInvalidUse(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	tests := []struct {
		src  string
		want []string
	}{
		{`mcp_on("conected", print)`, []string{`unknown event kind "conected"`, "connected", "hook_error"}},
		{`mcp_on("connected")`, []string{"bad argument #2", "function expected"}},
		{`mcp_on(1, print)`, []string{"bad argument #1"}},
		{`mcp_after({}, print)`, []string{"bad argument #1", "number expected"}},
		{`mcp_after(-1, print)`, []string{"seconds must be within 0..1000000, got -1"}},
		{`mcp_every(0, print)`, []string{"seconds must be within 0.01..1000000, got 0"}},
		{`mcp_every(0/0, print)`, []string{"seconds must be within"}},
		{`mcp_every(1)`, []string{"bad argument #2", "function expected"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			le := h.fail(t, tt.src)
			for _, want := range tt.want {
				require.Contains(t, le.Message, want)
			}
		})
	}
}

// TestFailingHookIsIsolated: a runtime error in a hook is logged with its
// traceback and reported as hook_error; the other hooks of the event still
// run, the failing hook stays registered, and non-string error values are
// rendered.
func TestFailingHookIsIsolated(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	id := h.id(t, `mcp_on("notification", function(e)
	local function check(ev)
		if ev.how == "nil index" then return ev.missing.field end
		if ev.how == "table" then error({code = 42}) end
		error("boom " .. ev.i)
	end
	check(e)
end, {server = "s"})`)
	h.run(t, `mcp_on("notification", function(e) print("after " .. e.i) end, {server = "s"})`)

	tests := []struct {
		how       string
		wantError string // prefix
	}{
		{"string", "test:5: boom 1"},
		{"nil index", "test:3: attempt to index a non-table object(nil) with key 'field'"},
		{"table", "error object: {\n  code = 42,\n}"},
	}
	for i, tt := range tests {
		n := i + 1
		h.publish("s", events.Fields{"i": n, "how": tt.how})
		h.lines.waitLine(t, 0, fmt.Sprintf("after %d", n))
		e := h.hookError(t, id)
		require.True(t, strings.HasPrefix(e.Text("error"), tt.wantError), "error %q, want prefix %q", e.Text("error"), tt.wantError)
		require.NotContains(t, e.Text("error"), "table: 0x")
		require.Equal(t, `mcp_on("notification", server="s")`, e.Text("hook"))
		require.Equal(t, int64(n), e.Int("failures"), "failures in a row")
		require.Empty(t, e.Server, "hook_error is host-wide")
		require.Nil(t, e.Fields["disabled"])
		trace := e.Text("traceback")
		require.True(t, strings.HasPrefix(trace, "stack traceback:"), trace)
		require.Contains(t, trace, "in function 'check'")
		require.Contains(t, trace, "test:7:", "the hook's own frame")
	}
	// The runtime and the manager are fine.
	require.Equal(t, "ok", h.one(t, `return "ok"`))
}

// TestHookDisabledAfterTenFailuresInARow: ten failures in a row disable a
// hook for good (the last hook_error says so); a success in between
// resets the count.
func TestHookDisabledAfterTenFailuresInARow(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	id := h.id(t, `mcp_on("notification", function(e)
		print("ran " .. e.i)
		if not e.ok then error("fail " .. e.i) end
	end, {server = "s"})`)
	i := 0
	fire := func(ok bool) {
		i++
		h.publish("s", events.Fields{"i": i, "ok": ok})
	}
	// Nine failures, a success, nine failures: never disabled.
	for range 9 {
		fire(false)
	}
	fire(true)
	for range 9 {
		fire(false)
	}
	h.flush(t)
	h.flush(t) // the failures' hook_error events are dispatched too
	for n := 1; n <= 19; n++ {
		require.Equal(t, 1, h.lines.count(0, fmt.Sprintf("ran %d", n)))
	}
	errs := h.bus.of(func(e events.Event) bool { return e.Kind == events.KindHookError })
	require.Len(t, errs, 18)
	for j, e := range errs {
		require.Equal(t, int64(j%9+1), e.Int("failures"), "hook_error %d: %s", j, e.Format())
		require.Nil(t, e.Fields["disabled"], e.Format())
	}

	// The tenth failure in a row disables it.
	fire(false)
	e := h.hookError(t, id)
	require.Equal(t, int64(10), e.Int("failures"))
	require.Equal(t, true, e.Fields["disabled"], e.Format())
	require.Contains(t, e.Text("error"), "fail 20")

	// It never runs again, successes included, and mcp_off says it is off.
	fire(true)
	fire(false)
	h.flush(t)
	h.flush(t)
	require.Equal(t, 0, h.lines.count(0, "ran 21"))
	require.Equal(t, 0, h.lines.count(0, "ran 22"))
	require.Len(t, h.bus.of(kindIs(events.KindHookError)), 19)
	require.Equal(t, "false", h.one(t, fmt.Sprintf(`return mcp_off(%d)`, id)))
}

// TestHookErrorDelivery: a hook_error goes to hooks on "hook_error" but
// never to the hook that failed (it would feed on itself), and never to
// "*" hooks (they would feed on each other's failures).
func TestHookErrorDelivery(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	failing := h.id(t, `mcp_on("notification", function() error("n") end, {server = "s"})`)
	watcher := h.id(t, `mcp_on("hook_error", function(e)
		print(string.format("watcher saw %d failures=%d", e.hook_id, e.failures))
		error("watcher fails too")
	end)`)
	h.run(t, `mcp_on("*", function(e) if e.kind == "hook_error" then print("star saw hook_error") end end)`)
	h.run(t, `mcp_on("*", function(e) error("star fails on " .. e.kind) end)`)

	h.publish("s", nil)
	h.lines.waitLine(t, 0, fmt.Sprintf("watcher saw %d failures=1", failing))
	// The watcher's own failure is published; wait for it, then let the
	// loop dispatch everything up to it.
	h.hookError(t, watcher)
	h.flush(t)
	h.flush(t)
	for _, l := range h.lines.all() {
		require.NotContains(t, l, fmt.Sprintf("watcher saw %d failures", watcher), "a hook got its own hook_error")
		require.NotEqual(t, "star saw hook_error", l)
	}
	// The failing "*" hook failed on the notification and on every marker
	// but never on a hook_error, and the watcher did see its failures.
	for _, e := range h.bus.of(kindIs(events.KindHookError)) {
		require.NotContains(t, e.Text("error"), "star fails on hook_error")
	}
	require.Positive(t, h.lines.count(0, fmt.Sprintf("watcher saw %d failures=1", failing+3)), "the watcher sees other hooks' failures")
}

// TestHookCanCallTools: hooks are tasks, so they may suspend in mcp_call,
// mcp_wait and sleep; the loop serves others meanwhile.
func TestHookCanCallTools(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	h.run(t, `mcp_on("connected", function(e)
		local res, err = mcp_call(e.server .. ".echo", {text = "hello from a hook"})
		sleep(0.001)
		print(e.server .. ": " .. (res and res.text or tostring(err)))
	end)`)
	h.addDemo(t, "demo")
	h.lines.waitLine(t, 0, "demo: hello from a hook")

	// A hook held inside mcp_call does not hold the loop.
	hold := make(chan struct{})
	h.spy.hold.Store(&hold)
	h.run(t, `mcp_on("notification", function(e) print("held: " .. mcp_call("demo.echo", {text = "late"}).text) end, {server = "s"})`)
	for len(h.spy.calls) > 0 { // earlier calls' reports
		<-h.spy.calls
	}
	h.publish("s", nil)
	entered(t, h.spy.calls, "demo.echo")
	h.spy.hold.Store(nil)
	h.flush(t)
	require.Equal(t, "ok", h.one(t, `return mcp_call("demo.echo", {text = "ok"}).text`))
	require.Equal(t, 0, h.lines.count(0, "held: late"))
	close(hold)
	h.lines.waitLine(t, 0, "held: late")
}

// TestMcpAfterRunsOnce: the function runs once, later; its handle is
// spent afterwards, and an mcp_off before it fires cancels it.
func TestMcpAfterRunsOnce(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	require.Equal(t, `mcp_after(0.01)`, h.one(t, `a = mcp_after(0.01, function() print("after fired") end) return a.what`))
	h.lines.waitLine(t, 0, "after fired")
	require.Equal(t, "false", h.one(t, `return mcp_off(a)`), "a fired one-shot timer is no longer registered")

	// Cancelled before it fires; a later timer proves the loop went past
	// the moment it would have fired.
	h.run(t, `local c = mcp_after(0.05, function() print("cancelled fired") end)
		assert(mcp_off(c) == true)
		mcp_after(0.15, function() print("later fired") end)`)
	h.lines.waitLine(t, 0, "later fired")
	require.Equal(t, 0, h.lines.count(0, "cancelled fired"))
	require.Equal(t, 1, h.lines.count(0, "after fired"))

	// Timers may suspend, like hooks.
	h.addDemo(t, "demo")
	h.run(t, `mcp_after(0, function() print("timer called: " .. mcp_call("demo.echo", {text = "t"}).text) end)`)
	h.lines.waitLine(t, 0, "timer called: t")
}

// TestMcpEveryRepeatsUntilOff: an interval timer runs until mcp_off; a
// timer that fails is reported like a hook.
func TestMcpEveryRepeatsUntilOff(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	h.run(t, `n = 0 ev = mcp_every(0.01, function() n = n + 1 print("tick " .. n) end)`)
	h.lines.waitLine(t, 0, "tick 3")
	require.Equal(t, "true", h.one(t, `return mcp_off(ev)`))
	stopped := h.one(t, `return n`)
	// A one-shot timer well after several intervals: had the interval timer
	// kept going, its ticks would come before this line.
	h.run(t, `mcp_after(0.1, function() print("done waiting") end)`)
	h.lines.waitLine(t, 0, "done waiting")
	require.Equal(t, stopped, h.one(t, `return n`))
	var ticks int
	_, err := fmt.Sscan(stopped, &ticks)
	require.NoError(t, err)
	require.Equal(t, 0, h.lines.count(0, fmt.Sprintf("tick %d", ticks+1)))

	// A failing interval timer: hook_error naming it, still running, and
	// disabled after ten failures in a row.
	id := h.id(t, `mcp_every(0.01, function() error("timer boom") end)`)
	for n := 1; n <= 10; n++ {
		e := h.hookError(t, id)
		require.Equal(t, "mcp_every(0.01)", e.Text("hook"))
		require.Equal(t, int64(n), e.Int("failures"))
		require.Contains(t, e.Text("error"), "timer boom")
		require.Contains(t, e.Text("traceback"), "stack traceback:")
		if n == 10 {
			require.Equal(t, true, e.Fields["disabled"])
		}
	}
	require.Equal(t, "false", h.one(t, fmt.Sprintf(`return mcp_off(%d)`, id)), "disabled")
}

// TestMcpCallCB: mcp_call_cb works where a suspending call cannot (inside
// pcall) and calls fn(result, err) later as its own task; a failing
// callback is reported like a hook.
func TestMcpCallCB(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	h.addDemo(t, "demo")
	require.Equal(t, []string{"true", "true", "returned first"}, h.run(t, `
		local ok, v = pcall(mcp_call_cb, "demo.echo", {text = "via cb"}, function(res, err)
			print("cb: " .. res.text .. " " .. tostring(err))
		end)
		print("returned first")
		return ok, v, "returned first"`))
	first := h.lines.waitLine(t, 0, "returned first")
	require.Greater(t, h.lines.waitLine(t, 0, "cb: via cb nil"), first, "the callback runs after the chunk")

	// Failures arrive as nil, err.
	h.run(t, `mcp_call_cb("demo.nope", {}, function(res, err) print("cb err: " .. tostring(res) .. " " .. err.code) end)`)
	h.lines.waitLine(t, 0, "cb err: nil TOOL_NOT_FOUND")

	// The callback may call mcp_call itself; a table.sort comparator is
	// another place where only mcp_call_cb works.
	h.run(t, `table.sort({2, 1}, function(a, b)
		mcp_call_cb("demo.add", {a = a, b = b}, function(res)
			print("sum " .. res.structured.sum .. " then " .. mcp_call("demo.echo", {text = "nested"}).text)
		end)
		return a < b
	end)`)
	h.lines.waitLine(t, 0, "sum 3 then nested")

	// A failing callback: hook_error naming it, with its traceback.
	h.run(t, `mcp_call_cb("demo.echo", {text = "x"}, function(res) error("cb failed on " .. res.text) end)`)
	e := h.bus.next(t, "callback hook_error", kindIs(events.KindHookError))
	require.Equal(t, `mcp_call_cb("demo.echo")`, e.Text("hook"))
	require.Contains(t, e.Text("error"), "test:1: cb failed on x")
	require.Contains(t, e.Text("traceback"), "test:1:")

	le := h.fail(t, `mcp_call_cb("demo.echo", {}, "not a function")`)
	require.Contains(t, le.Message, "bad argument #3 to mcp_call_cb (function(result, err) expected, got string)")
}

// TestRunawayHookStoppedByBudget: a hook in an infinite loop is stopped
// after the slice budget with an error saying so and its traceback; it
// stays registered, and the loop carries on.
func TestRunawayHookStoppedByBudget(t *testing.T) {
	h := newHookRuntime(t, 30*time.Millisecond, nil)
	id := h.id(t, `mcp_on("notification", function(e)
	local function spin()
		while true do end
	end
	print("spinning " .. e.i)
	spin()
end, {server = "s"})`)
	for i := 1; i <= 2; i++ {
		h.publish("s", events.Fields{"i": i})
		h.lines.waitLine(t, 0, fmt.Sprintf("spinning %d", i))
		e := h.hookError(t, id)
		msg := e.Text("error")
		require.Contains(t, msg, "30ms", msg)
		require.Contains(t, msg, "budget", msg)
		require.Equal(t, int64(i), e.Int("failures"))
		require.Contains(t, e.Text("traceback"), "in function 'spin'")
		require.Contains(t, e.Text("traceback"), "test:3:")
		require.Equal(t, "carried on", h.one(t, `return "carried on"`))
	}
}

// TestDefaultSliceBudget: without Options.SliceBudget, a slice gets 100ms,
// and timers and callbacks are bounded like hooks.
func TestDefaultSliceBudget(t *testing.T) {
	h := newHookRuntime(t, 0, nil)
	h.addDemo(t, "demo")
	timer := h.id(t, `mcp_after(0, function() while true do end end)`)
	e := h.hookError(t, timer)
	require.Contains(t, e.Text("error"), "100ms")
	require.Contains(t, e.Text("error"), "budget")

	h.run(t, `mcp_call_cb("demo.echo", {text = "x"}, function() while true do end end)`)
	e = h.bus.next(t, "callback hook_error", kindIs(events.KindHookError))
	require.Equal(t, `mcp_call_cb("demo.echo")`, e.Text("hook"))
	require.Contains(t, e.Text("error"), "100ms")
	require.Equal(t, "ok", h.one(t, `return "ok"`))
}

// TestBudgetIsPerSlice: the budget bounds each run between two
// suspensions, not a hook's whole life: a hook that sleeps between short
// bursts lives far longer than its budget.
func TestBudgetIsPerSlice(t *testing.T) {
	h := newHookRuntime(t, 20*time.Millisecond, nil)
	h.run(t, `mcp_on("notification", function(e)
		for _ = 1, 10 do sleep(0.01) end
		print("patient hook done")
	end, {server = "s"})`)
	h.publish("s", nil)
	h.lines.waitLine(t, 0, "patient hook done")
	require.Empty(t, h.bus.of(kindIs(events.KindHookError)))
}

// TestExecHasNoBudget: chunks run by Exec (startup.lua, REPL lines) are
// not bounded by the slice budget; their ctx cancels them.
func TestExecHasNoBudget(t *testing.T) {
	h := newHookRuntime(t, 10*time.Millisecond, nil)
	// Busy for well over the budget, measured by the wall clock.
	require.Equal(t, "done", h.one(t, `
		local deadline = os.clock() + 0.1
		while os.clock() < deadline do end
		return "done"`))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := h.Exec(ctx, `while true do end`, "test")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, "ok", h.one(t, `return "ok"`))
}

// TestHostStaysResponsiveWhileHookMisbehaves is the "done means"
// for runaway and non-interruptible hooks: a hook on every event that spins
// forever, that fails, or that asks string.rep for a gigabyte leaves the
// host responsive. The proof is in the order of things, not in timings: for
// each event the misbehaving hook (registered first) fails — its failures
// count climbs by one per event, so it was misbehaving throughout — and
// still the well-behaved hook gets that event, an Exec'd chunk completes
// before the next event, and a real server connects and is seen by the good
// hook.
func TestHostStaysResponsiveWhileHookMisbehaves(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantError []string
	}{
		{"runaway", `while true do end`, []string{"100ms", "budget"}},
		{"error on every event", `error("bad hook on " .. e.kind)`, []string{"test:3: bad hook on "}},
		{"string.rep of a gigabyte", `local s = string.rep("x", 1e9) print(#s)`, []string{"string.rep", "1000000000 bytes", "limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHookRuntime(t, 0, nil) // the default budget, 100ms
			bad := h.id(t, `mcp_on("*", function(e)
	if e.server == "marker" then return end
	`+tt.body+`
end)`)
			h.run(t, `mcp_on("notification", function(e) print("good got " .. e.i) end, {server = "good"})
				mcp_on("connected", function(e) print("good connected " .. e.server) end, {server = "good"})`)
			failures := int64(0)
			nextFailure := func() events.Event {
				t.Helper()
				e := h.hookError(t, bad)
				failures++
				require.Equal(t, failures, e.Int("failures"), e.Format())
				for _, want := range tt.wantError {
					require.Contains(t, e.Text("error"), want)
				}
				require.Contains(t, e.Text("traceback"), "stack traceback:")
				require.Contains(t, e.Text("traceback"), "test:3:", "the hook's line")
				return e
			}
			for i := 1; i <= 4; i++ {
				h.publish("good", events.Fields{"i": i})
				h.lines.waitLine(t, 0, fmt.Sprintf("good got %d", i))
				nextFailure()
				require.Equal(t, []string{fmt.Sprint("exec ", i), "{}"}, h.run(t, fmt.Sprintf(`return "exec %d", mcp_servers()`, i)))
			}
			// A real server: added, connecting, connected each run the bad
			// hook first, and the good hook still sees the connection.
			h.run(t, `mcp_add("good", {command = {"demo"}})`)
			h.lines.waitLine(t, 0, "good connected good")
			for range 3 { // added, connecting, connected
				nextFailure()
			}
			require.Equal(t, "connected", h.one(t, `return mcp_status("good").state`))
			require.Equal(t, "good", h.one(t, `return mcp_call("good.echo", {text = "good"}).text`))
			// Disabled after its tenth failure in a row; events flow on.
			for i := 5; i <= 7; i++ {
				h.publish("good", events.Fields{"i": i})
				h.lines.waitLine(t, 0, fmt.Sprintf("good got %d", i))
				e := nextFailure()
				require.Equal(t, i == 7, e.Fields["disabled"] == true, e.Format())
			}
			h.publish("good", events.Fields{"i": 8})
			h.lines.waitLine(t, 0, "good got 8")
			h.flush(t)
			h.flush(t)
			require.Len(t, h.bus.of(kindIs(events.KindHookError)), 10, "the disabled hook never ran again")
			if tt.name == "runaway" {
			}
		})
	}
}

// The loop asks the bus for tool calls only while a hook takes them: a
// call that went well publishes nothing otherwise (no hook to run, nothing
// to wake), and a hook on tool_call or "*" gets every call.
func TestHooksAskForToolCallsOnlyWhileHooked(t *testing.T) {
	r := newTestRuntime(t, nil)
	bus := r.m.Bus()
	require.False(t, bus.Wants(events.KindToolCall), "no hook takes tool calls")

	r.run(t, `h = mcp_on("tool_call", function(e) end)`)
	require.True(t, bus.Wants(events.KindToolCall))
	r.run(t, `mcp_off(h)`)
	require.False(t, bus.Wants(events.KindToolCall))

	r.run(t, `h1 = mcp_on("connected", function(e) end); h2 = mcp_on("*", function(e) end)`)
	require.True(t, bus.Wants(events.KindToolCall), "a hook on every kind takes tool calls")
	r.run(t, `mcp_off(h2)`)
	require.False(t, bus.Wants(events.KindToolCall))
}
