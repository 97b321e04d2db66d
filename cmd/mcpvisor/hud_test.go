package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chzyer/readline"
	"github.com/hinshun/vt10x"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/events/hud"
	"github.com/mcpvisor/mcpvisor/manager"
)

// fakeTTY is a terminal for the HUD to draw on: a vt10x emulator behind
// one lock, as ttyWriter puts the real one.
type fakeTTY struct {
	mu sync.Mutex
	// mu guards the following.
	vt         vt10x.Terminal
	cols, rows int
	writes     int
}

func newFakeTTY(cols, rows int) *fakeTTY {
	return &fakeTTY{vt: vt10x.New(vt10x.WithSize(cols, rows)), cols: cols, rows: rows}
}

func (f *fakeTTY) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	return f.vt.Write(p)
}

// print writes s as the REPL would: text at the cursor.
func (f *fakeTTY) print(s string) { _, _ = io.WriteString(f, s) }

func (f *fakeTTY) Size() (int, int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cols, f.rows, nil
}

func (f *fakeTTY) resize(cols, rows int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.vt.Resize(cols, rows)
	f.cols, f.rows = cols, rows
}

func (f *fakeTTY) frames() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// screen returns the rows as a person would read them (trailing blanks
// trimmed) and the cursor.
func (f *fakeTTY) screen() ([]string, vt10x.Cursor) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return vtScreen(f.vt)
}

func vtScreen(vt vt10x.Terminal) ([]string, vt10x.Cursor) {
	vt.Lock()
	defer vt.Unlock()
	cols, rows := vt.Size()
	out := make([]string, rows)
	for y := range rows {
		var b strings.Builder
		for x := range cols {
			c := vt.Cell(x, y).Char
			if c == 0 {
				c = ' '
			}
			b.WriteRune(c)
		}
		out[y] = strings.TrimRight(b.String(), " ")
	}
	return out, vt.Cursor()
}

// settle lets the display draw what it has pending (frames are throttled).
func settle() {
	time.Sleep(hudFrameGap)
	synctest.Wait()
}

func rule(cols int) string { return strings.Repeat("─", cols-1) }

// startTestHUD starts a display on tty over bus; it is stopped when the
// test (bubble) ends. resize is its SIGWINCH.
func startTestHUD(t *testing.T, tty *fakeTTY, bus *events.Bus, resize chan os.Signal) *hudDisplay {
	if resize == nil {
		resize = make(chan os.Signal) // never: signal.Notify has no place in a bubble
	}
	d := startHUD(hudOptions{Out: tty, Size: tty.Size, Bus: bus, Enabled: true, Resized: resize})
	t.Cleanup(d.Stop)
	return d
}

// The block sits at the top; the half-typed line that was where the block
// goes is pushed below it, intact, with the cursor where it was in the
// line; output then scrolls under the block; countdowns tick.
func TestHUDDisplayPinsBlockAboveTyping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(60, 16)
		tty.print("earlier output 1\r\nearlier output 2\r\nmcp> retur")
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		// Before the display starts: it learns of demo from the history.
		bus.Emit("demo", "", manager.Added{Transport: manager.TransportStdio})
		bus.Emit("demo", "", manager.Connected{Attempt: 1, Tools: 4})
		startTestHUD(t, tty, bus, nil)
		bus.Emit("broken", "", manager.Added{Transport: manager.TransportStdio})
		bus.Emit("broken", "", manager.BackingOff{Attempt: 1, Delay: 2400 * time.Millisecond, Error: "boom"})
		settle()

		rows, cur := tty.screen()
		require.Equal(t, []string{
			"mcpvisor: 2 servers · 1 connected · 1 retrying",
			"↻ broken  stdio  0 tools  retry in 2.3s (attempt 2) · boom",
			"● demo    stdio  4 tools",
			rule(60),
		}, rows[:4], "the block; drawn 100ms after the backoff (throttled)")
		require.Equal(t, "mcp> retur", rows[cur.Y], "the typed line, intact; screen:\n%s", strings.Join(rows, "\n"))
		require.Equal(t, len("mcp> retur"), cur.X)
		require.Equal(t, 4, cur.Y, "the line is pushed below the block")

		tty.print("n 1")
		rows, cur = tty.screen()
		require.Equal(t, "mcp> return 1", rows[cur.Y])

		for i := range 30 {
			tty.print(fmt.Sprintf("\r\nout %d", i))
		}
		rows, _ = tty.screen()
		require.Equal(t, "mcpvisor: 2 servers · 1 connected · 1 retrying", rows[0], "output scrolls under the block")
		require.Equal(t, rule(60), rows[3])
		require.Equal(t, "out 18", rows[4], "the region below the block scrolls")
		require.Equal(t, "out 29", rows[15])

		time.Sleep(time.Second)
		synctest.Wait()
		rows, _ = tty.screen()
		require.Equal(t, "↻ broken  stdio  0 tools  retry in 1.4s (attempt 2) · boom", rows[1], "redrawn by the second's tick")
	})
}

// The block grows and shrinks with the servers; the line being typed stays
// intact below it, and rows the block gives back are cleared.
func TestHUDDisplayFollowsServers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(50, 14)
		for i := range 20 {
			tty.print(fmt.Sprintf("line %d\r\n", i))
		}
		tty.print("mcp> x = 1")
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		bus.Emit("a", "", manager.Added{Transport: manager.TransportStdio})
		startTestHUD(t, tty, bus, nil)
		synctest.Wait()
		rows, cur := tty.screen()
		require.Equal(t, []string{"mcpvisor: 1 server · 1 connecting", "◌ a  stdio  0 tools  connecting", rule(50)}, rows[:3])
		require.Equal(t, 13, cur.Y, "the cursor stays on the last row")
		require.Equal(t, "mcp> x = 1", rows[13])
		require.Equal(t, "line 19", rows[12])

		bus.Emit("b", "", manager.Added{Transport: manager.TransportHTTP})
		bus.Emit("c", "", manager.Added{Transport: manager.TransportHTTP})
		settle()
		rows, cur = tty.screen()
		require.Equal(t, "mcpvisor: 3 servers · 3 connecting", rows[0])
		require.Equal(t, rule(50), rows[4])
		require.Equal(t, "mcp> x = 1", rows[cur.Y])
		require.Equal(t, 13, cur.Y)
		require.Equal(t, "line 19", rows[12], "nothing below the block was overwritten")
		require.Equal(t, "line 12", rows[5])

		bus.Emit("b", "", manager.Removed{})
		bus.Emit("c", "", manager.Removed{})
		settle()
		rows, cur = tty.screen()
		require.Equal(t, []string{"mcpvisor: 1 server · 1 connecting", "◌ a  stdio  0 tools  connecting", rule(50), "", ""}, rows[:5],
			"the rows given back are cleared")
		require.Equal(t, "mcp> x = 1", rows[cur.Y])
		tty.print("\r\nnext")
		rows, _ = tty.screen()
		require.Equal(t, "next", rows[13])
		require.Equal(t, "", rows[3], "the freed rows scroll with the region")
		require.Equal(t, rule(50), rows[2], "the block stays")
	})
}

// mcp_hud(false) erases the block and gives the whole screen back;
// mcp_hud(true) brings it back; Stop leaves the terminal whole.
func TestHUDDisplayEnableDisableStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(40, 10)
		tty.print("mcp> ")
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		bus.Emit("a", "", manager.Added{Transport: manager.TransportStdio})
		d := startTestHUD(t, tty, bus, nil)
		synctest.Wait()
		rows, _ := tty.screen()
		require.Equal(t, "mcpvisor: 1 server · 1 connecting", rows[0])

		was, err := d.SetEnabled(false)
		require.NoError(t, err)
		require.True(t, was)
		settle()
		rows, cur := tty.screen()
		require.Equal(t, "mcp>", rows[0], "erased, and the screen moved up into its rows")
		require.Equal(t, 0, cur.Y, "the cursor moved up with its line")
		require.Equal(t, len("mcp> "), cur.X)
		for i := range 12 {
			tty.print(fmt.Sprintf("\r\nout %d", i))
		}
		rows, _ = tty.screen()
		require.Equal(t, "out 2", rows[0], "the whole screen scrolls again")

		was, err = d.SetEnabled(true)
		require.NoError(t, err)
		require.False(t, was)
		settle()
		rows, cur = tty.screen()
		require.Equal(t, "mcpvisor: 1 server · 1 connecting", rows[0])
		require.Equal(t, "out 11", rows[cur.Y])

		d.Stop()
		rows, cur = tty.screen()
		require.Equal(t, []string{"out 5", "out 6", "out 7", "out 8", "out 9", "out 10", "out 11"}, rows[:7], "erased at exit, no blank rows left")
		require.Equal(t, "out 11", rows[cur.Y])
		tty.print("\r\nafter")
		for i := range 12 {
			tty.print(fmt.Sprintf("\r\nexit %d", i))
		}
		rows, _ = tty.screen()
		require.Equal(t, "exit 2", rows[0], "no scroll region left behind")

		_, err = d.SetEnabled(true)
		require.ErrorIs(t, err, errHUDStopped)
	})
}

// On SIGWINCH the block is laid out for the new size; lines never exceed
// it.
func TestHUDDisplayResize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(80, 20)
		for i := range 25 {
			tty.print(fmt.Sprintf("line %d\r\n", i))
		}
		tty.print("mcp> resize me")
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		bus.Emit("broken", "", manager.Added{Transport: manager.TransportStdio})
		bus.Emit("broken", "", manager.BackingOff{Attempt: 1, Delay: time.Minute, Error: "a long error that does not fit a narrow terminal at all, not even close"})
		winch := make(chan os.Signal, 1)
		startTestHUD(t, tty, bus, winch)
		synctest.Wait()

		tty.resize(40, 12)
		winch <- os.Signal(nil)
		settle()
		rows, cur := tty.screen()
		require.Equal(t, "mcpvisor: 1 server · 1 retrying", rows[0])
		require.Equal(t, "↻ broken  retry in 60s (attempt 2) · a…", rows[1])
		require.Equal(t, rule(40), rows[2])
		require.Equal(t, "mcp> resize me", rows[cur.Y])
		for _, r := range rows {
			require.LessOrEqual(t, hud.Width(r), 39, "row %q", r)
		}
		for i := range 15 {
			tty.print(fmt.Sprintf("\r\nout %d", i))
		}
		rows, _ = tty.screen()
		require.Equal(t, rule(40), rows[2], "the region follows the new size")
		require.Equal(t, "out 14", rows[11])
	})
}

// Ctrl-L with the block shown clears below it and lets readline redraw
// its line there; without the block, readline handles it.
func TestHUDDisplayCtrlL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(40, 10)
		tty.print("some\r\noutput\r\nmcp> abc")
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		bus.Emit("a", "", manager.Added{Transport: manager.TransportStdio})
		d := startTestHUD(t, tty, bus, nil)
		synctest.Wait()

		r, pass := d.filterKey('x')
		require.Equal(t, 'x', r)
		require.True(t, pass, "other keys go to readline")
		_, pass = d.filterKey(readline.CharCtrlL)
		require.False(t, pass, "the HUD cleared the screen; readline only redraws its line")
		rows, cur := tty.screen()
		require.Equal(t, "mcpvisor: 1 server · 1 connecting", rows[0])
		require.Equal(t, 3, cur.Y, "the cursor is at the top of the region")
		require.Equal(t, 0, cur.X)
		require.Equal(t, []string{"", "", "", "", "", "", ""}, rows[3:], "everything below the block is cleared")

		_, err := d.SetEnabled(false)
		require.NoError(t, err)
		settle()
		_, pass = d.filterKey(readline.CharCtrlL)
		require.True(t, pass, "no block: readline clears the screen itself")
	})
}

// However many events arrive, the display draws at most 10 frames a
// second (plus the layout changes).
func TestHUDDisplayThrottles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(60, 16)
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		bus.Emit("a", "", manager.Added{Transport: manager.TransportStdio})
		bus.Emit("a", "", manager.Connected{Tools: 1})
		startTestHUD(t, tty, bus, nil)
		synctest.Wait()
		before := tty.frames()
		for i := range 400 { // 2s of an event every 5ms, each changing the line
			bus.Emit("a", "", manager.HealthFailed{Error: fmt.Sprintf("ping %d timed out", i)})
			time.Sleep(5 * time.Millisecond)
		}
		settle()
		frames := tty.frames() - before
		assert.LessOrEqual(t, frames, 21, "at most 10 frames a second")
		assert.GreaterOrEqual(t, frames, 15, "but it keeps up")
		rows, _ := tty.screen()
		assert.Equal(t, "● a  stdio  1 tool   ping 399 timed out", rows[1], "the last event is drawn")
	})
}

// The HUD is only set up when stdout is a terminal, and never with -e.
func TestHUDOnlyOnATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	var buf strings.Builder
	for _, tt := range []struct {
		name   string
		cfg    config
		stdout io.Writer
	}{
		{"a buffer", config{hud: hudOn}, &buf},
		{"a pipe", config{hud: hudOn}, w},
		{"-e", config{hasCode: true, hud: hudOn}, os.Stdout},
	} {
		out, errOut, opts := terminalHUD(tt.cfg, true, tt.stdout, os.Stderr)
		assert.Nil(t, opts, tt.name)
		assert.Equal(t, tt.stdout, out, tt.name)
		assert.Equal(t, os.Stderr, errOut, tt.name)
	}
}

func TestHUDFlags(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want hudMode
	}{
		{nil, hudAuto},
		{[]string{"--hud"}, hudOn},
		{[]string{"--no-hud"}, hudOff},
	} {
		cfg, err := parseFlags(tt.args, io.Discard)
		require.NoError(t, err)
		assert.Equal(t, tt.want, cfg.hud, "%v", tt.args)
	}
	_, err := parseFlags([]string{"--hud", "--no-hud"}, io.Discard)
	require.ErrorContains(t, err, "--hud and --no-hud contradict")
}

// A server's row says what its tools' definitions cost a model, counted
// off the display's goroutine when it connects and again when its tools
// change; the count in progress never holds up a frame.
func TestHUDDisplayShowsTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(70, 10)
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		costs := map[string]int{"demo": 842}
		var mu sync.Mutex // guards costs: the counter goroutine reads it
		slow := make(chan struct{})
		d := startHUD(hudOptions{Out: tty, Size: tty.Size, Bus: bus, Enabled: true, Resized: make(chan os.Signal),
			Costs: func(server string) int {
				<-slow // a first count that loads the vocabulary
				mu.Lock()
				defer mu.Unlock()
				return costs[server]
			}})
		t.Cleanup(d.Stop)
		bus.Emit("demo", "", manager.Added{Transport: manager.TransportStdio})
		bus.Emit("demo", "", manager.Connected{Attempt: 1, Tools: 4})
		settle()
		rows, _ := tty.screen()
		require.Equal(t, "● demo  stdio  4 tools", rows[1], "drawn while the count is still going")

		close(slow)
		settle()
		rows, _ = tty.screen()
		require.Equal(t, "● demo  stdio  4 tools  842 tok", rows[1])

		mu.Lock()
		costs["demo"] = 1234
		mu.Unlock()
		bus.Emit("demo", "", manager.ItemsChanged{Of: events.KindToolsChanged, Added: []string{"more"}})
		settle()
		rows, _ = tty.screen()
		require.Equal(t, "● demo  stdio  5 tools  1.2k tok", rows[1], "counted again when the tools change")
	})
}

// The HUD shows a server's calls, failures and latency as the manager
// counts them, read on its tick: it asks the bus for no tool calls, so a
// call that went well wakes no display.
func TestHUDDisplayReadsCallsFromMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(70, 10)
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		var mu sync.Mutex
		// mu guards metrics: the display's goroutine reads it.
		metrics := manager.Metrics{Server: "demo"}
		d := startHUD(hudOptions{Out: tty, Size: tty.Size, Bus: bus, Enabled: true, Resized: make(chan os.Signal),
			Metrics: func(server string) (manager.Metrics, error) {
				mu.Lock()
				defer mu.Unlock()
				return metrics, nil
			}})
		t.Cleanup(d.Stop)
		require.False(t, bus.Wants(events.KindToolCall), "the HUD asks for no tool calls")

		bus.Emit("demo", "", manager.Added{Transport: manager.TransportStdio})
		bus.Emit("demo", "", manager.Connected{Attempt: 1, Tools: 4})
		settle()
		rows, _ := tty.screen()
		require.Equal(t, "● demo  stdio  4 tools", rows[1])

		mu.Lock()
		metrics.Requests, metrics.Latency = 3, 12*time.Millisecond
		metrics.Errors.Tool = 1
		mu.Unlock()
		frames := tty.frames()
		time.Sleep(hudTick) // no event: the tick shows them
		synctest.Wait()
		rows, _ = tty.screen()
		require.Equal(t, "● demo  stdio  4 tools  12ms  1 failed call", rows[1])
		require.Greater(t, tty.frames(), frames)
	})
}

// Once a gateway serves, the line under the summary says what each of its
// endpoints costs a model in its mode; it is counted again when the
// gateway starts listening and when the servers' tools change. Without a
// gateway the block is as it was.
func TestHUDDisplayShowsEndpoints(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tty := newFakeTTY(70, 12)
		bus := events.NewBus(events.Options{})
		defer bus.Close()
		var mu sync.Mutex // guards eps: the counter goroutine reads it
		var eps []hud.Endpoint
		d := startHUD(hudOptions{Out: tty, Size: tty.Size, Bus: bus, Enabled: true, Resized: make(chan os.Signal),
			Endpoints: func() []hud.Endpoint {
				mu.Lock()
				defer mu.Unlock()
				return eps
			}})
		t.Cleanup(d.Stop)
		bus.Emit("demo", "", manager.Added{Transport: manager.TransportStdio})
		bus.Emit("demo", "", manager.Connected{Attempt: 1, Tools: 4})
		settle()
		rows, _ := tty.screen()
		require.Equal(t, []string{"mcpvisor: 1 server · 1 connected", "● demo  stdio  4 tools", rule(70)}, rows[:3], "no gateway: no endpoint line")

		mu.Lock()
		eps = []hud.Endpoint{{Path: "/mcp", Mode: "direct", Tokens: 842}, {Path: "/toolsets/dev", Mode: "search", Tokens: 473}}
		mu.Unlock()
		d.endpointsChanged() // the gateway listens
		settle()
		rows, _ = tty.screen()
		require.Equal(t, []string{"mcpvisor: 1 server · 1 connected", "/mcp direct 842 tok · /toolsets/dev search 473 tok", "● demo  stdio  4 tools", rule(70)}, rows[:4])

		mu.Lock()
		eps = []hud.Endpoint{{Path: "/mcp", Mode: "direct", Tokens: 1234}, {Path: "/toolsets/dev", Mode: "search", Tokens: 473}}
		mu.Unlock()
		bus.Emit("demo", "", manager.ItemsChanged{Of: events.KindToolsChanged, Added: []string{"more"}})
		settle()
		rows, _ = tty.screen()
		require.Equal(t, "/mcp direct 1.2k tok · /toolsets/dev search 473 tok", rows[1], "counted again when the tools change")

		// The gateway keeps a server's tools listed a moment after it is
		// gone, in case it comes back: counted at once, and again later.
		bus.Emit("demo", "", manager.Removed{})
		settle()
		mu.Lock()
		eps = []hud.Endpoint{{Path: "/mcp", Mode: "direct", Tokens: 91}, {Path: "/toolsets/dev", Mode: "search", Tokens: 473}}
		mu.Unlock()
		time.Sleep(endpointRecountTicks * hudTick)
		settle()
		rows, _ = tty.screen()
		require.Equal(t, "/mcp direct 91 tok · /toolsets/dev search 473 tok", rows[1], "counted again once the gateway has taken them off")
	})
}

// The endpoints shown are /mcp and the toolsets', named without the
// trailing /mcp; a server's own endpoint is left to its row.
func TestHUDShownEndpoint(t *testing.T) {
	for in, want := range map[string]string{"/mcp": "/mcp", "/toolsets/dev/mcp": "/toolsets/dev", "/servers/demo/mcp": ""} {
		got, ok := shownEndpoint(in)
		if want == "" {
			assert.False(t, ok, in)
			continue
		}
		assert.True(t, ok, in)
		assert.Equal(t, want, got)
	}
}
