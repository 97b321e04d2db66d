package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chzyer/readline"
	"golang.org/x/term"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/events/hud"
	"github.com/mcpvisor/mcpvisor/manager"
)

// The HUD is a block pinned at the top of the terminal: a summary line, a
// line per server (events/hud) and a rule. Below it a scroll region
// (DECSTBM) holds everything else — logs, print output, the REPL's prompt —
// so that output scrolls under the block instead of over it.
//
// Every frame is one Write of: save cursor (DECSC), for each line move
// there (CUP), erase the line and write it, restore cursor (DECRC). It goes
// through ttyWriter, the lock that readline's output (its Stdout and
// Stderr: redraws of the line being typed, logs, print) takes for each of
// its writes too, so a frame never lands inside an escape sequence or a
// redraw, and restoring the cursor puts readline's cursor back exactly
// where it was: the line being typed is never touched.
//
// When the block changes height (a server added or removed) the scroll
// region moves: before it grows, the cursor moves up as many rows (RI,
// which scrolls the region down when it reaches the top) and back down
// (CUD), so the line being typed always ends up below the block, whatever
// row it was on. On a resize (SIGWINCH) terminals variously keep, reset or
// clip the region and move or rewrap the screen, old block included, so the
// screen above the cursor's line is cleared and the block laid out afresh.
// Ctrl-L clears only below the block.

const (
	// hudFrameGap throttles drawing to at most 10 frames a second.
	hudFrameGap = 100 * time.Millisecond
	// hudTick redraws countdowns ("retry in 2.4s").
	hudTick = time.Second
	// hudMinCols and hudMinRows: below this the HUD hides itself.
	hudMinCols, hudMinRows = 30, 8
	// endpointRecountTicks: the endpoints are counted again this many
	// ticks after a server's tools left the lists, once the gateway has
	// taken them off.
	endpointRecountTicks = 2
	// hudStopWait bounds Stop: a terminal that does not take the last
	// frame (Ctrl-S) must not hang the exit.
	hudStopWait = 2 * time.Second
)

// Terminal control sequences.
const (
	escSave        = "\x1b7"  // DECSC: save cursor position and attributes
	escRestore     = "\x1b8"  // DECRC: restore them
	escReverseLine = "\x1bM"  // RI: cursor up, scrolling down at the top margin
	escResetRegion = "\x1b[r" // DECSTBM with no margins: the whole screen scrolls
	escEraseLine   = "\x1b[2K"
	escEraseBelow  = "\x1b[J"
	escEraseAbove  = "\x1b[1J" // from the top of the screen to the cursor
	escCursorUp    = "\x1b[A"
)

var errHUDStopped = errors.New("the HUD has stopped: the REPL has ended")

// hudOptions configures a hudDisplay.
type hudOptions struct {
	// Out is the terminal, through the lock every other writer to it takes.
	Out io.Writer
	// Size returns the terminal's columns and rows.
	Size func() (cols, rows int, err error)
	// Bus is where the events come from. Set by startHost.
	Bus *events.Bus
	// Enabled is whether the block is shown at start.
	Enabled bool
	// Resized signals a change of the terminal's size. If nil, SIGWINCH.
	Resized <-chan os.Signal
	// Now is the clock of the countdowns. If nil, time.Now.
	Now func() time.Time
	// Config is the config file the login commands shown must name ("":
	// the default).
	Config string
	// Costs, if set, counts what a server's tool definitions cost a model
	// in tokens, for the tokens column. It may be slow (the first count
	// loads the vocabulary), so the display calls it on a goroutine of its
	// own, once per change of the server's tools. Set by startHost.
	Costs func(server string) int
	// Metrics, if set, is where a server's calls, failures and latency
	// are read, on each frame (the manager's Metrics). The display takes
	// no tool_call events: a call wakes no display. Set by startHost.
	Metrics func(server string) (manager.Metrics, error)
	// Endpoints, if set, says what each endpoint of the gateway costs a
	// model in its mode, or nil when no gateway runs, for the line under
	// the summary. It reads the gateway and counts, so the display calls
	// it on the counting goroutine too, when the servers' tools or the
	// config change and when endpointsChanged says so. Set by startHost.
	Endpoints func() []hud.Endpoint
}

// hudDisplay draws the HUD. Its goroutine (run) owns the model and
// everything it has drawn; the rest post to it.
type hudDisplay struct {
	opts     hudOptions
	sub      *events.Subscription
	enabled  atomic.Bool
	poke     chan struct{}  // capacity 1: enabled changed
	clearReq chan chan bool // Ctrl-L: clear below the block
	stop     chan struct{}  // closed by Stop
	done     chan struct{}  // closed when run has returned
	stopOnce sync.Once
	winch    chan os.Signal // SIGWINCH, when opts.Resized is nil
	// count hands the counter goroutine a server to count; counted brings
	// its answer back; counterDone is closed when it has returned.
	count       chan string
	counted     chan tokenCount
	counterDone chan struct{}
	// recount (capacity 1) asks the counter goroutine to count the
	// gateway's endpoints again; endpoints brings its answer back.
	recount   chan struct{}
	endpoints chan []hud.Endpoint

	// Owned by the run goroutine.
	model   hud.Model
	toCount []string // servers whose tools changed since they were counted
	// recountIn is how many ticks until the endpoints are counted again,
	// after a server's tools left the lists (0: none due). The gateway
	// keeps what leaves listed a moment, in case it comes straight back,
	// so the count made at once still has them.
	recountIn  int
	shown      int    // rows the block occupies; 0: none, no scroll region
	cols, rows int    // the size the block was laid out for
	last       string // the last frame written
}

// startHUD subscribes to the bus and starts the display's goroutine.
func startHUD(opts hudOptions) *hudDisplay {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &hudDisplay{
		opts:     opts,
		poke:     make(chan struct{}, 1),
		clearReq: make(chan chan bool),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),

		count:       make(chan string),
		counted:     make(chan tokenCount),
		counterDone: make(chan struct{}),
		recount:     make(chan struct{}, 1),
		endpoints:   make(chan []hud.Endpoint),
	}
	if d.opts.Resized == nil {
		d.winch = make(chan os.Signal, 1)
		notifyResize(d.winch)
		d.opts.Resized = d.winch
	}
	d.enabled.Store(opts.Enabled)
	d.model.LoginCommand = func(server string) string { return loginCommand(opts.Config, server) }
	// Subscribe before reading the history: the model skips the overlap.
	// Calls are read from the metrics, not the bus.
	d.sub = opts.Bus.Subscribe(events.SubscribeOptions{Passive: []events.Kind{events.KindToolCall}})
	for _, e := range opts.Bus.History(0) {
		d.apply(e)
	}
	go d.run()
	go d.counter()
	return d
}

// showing reports whether the block is on (false without a HUD).
func (d *hudDisplay) showing() bool { return d != nil && d.enabled.Load() }

// SetEnabled shows or hides the block (luaapi.HUD, for mcp_hud). It
// returns at once; the display's goroutine draws or erases.
func (d *hudDisplay) SetEnabled(on bool) (bool, error) {
	select {
	case <-d.done:
		return d.enabled.Load(), errHUDStopped
	default:
	}
	was := d.enabled.Swap(on)
	select {
	case d.poke <- struct{}{}:
	default:
	}
	return was, nil
}

// Stop erases the block, resets the scroll region and waits for the
// goroutine, up to hudStopWait. It is idempotent and nil-safe.
func (d *hudDisplay) Stop() {
	if d == nil {
		return
	}
	d.stopOnce.Do(func() { close(d.stop) })
	deadline := time.After(hudStopWait)
	for _, done := range []chan struct{}{d.done, d.counterDone} {
		select {
		case <-done:
		case <-deadline:
			return
		}
	}
}

// resetRegion gives the terminal back its whole screen at once, from any
// goroutine: for a forced exit, which does not wait for Stop.
func (d *hudDisplay) resetRegion() {
	if d != nil {
		_, _ = io.WriteString(d.opts.Out, escSave+escResetRegion+escRestore)
	}
}

// filterKey is readline's FuncFilterInputRune. Ctrl-L would clear the whole
// screen and draw the prompt over the block; with the block shown, it
// clears only below it, and readline redraws the line there.
func (d *hudDisplay) filterKey(r rune) (rune, bool) {
	if r != readline.CharCtrlL || d == nil {
		return r, true
	}
	reply := make(chan bool, 1)
	select {
	case d.clearReq <- reply:
	case <-d.done:
		return r, true
	}
	select {
	case shown := <-reply:
		return r, !shown
	case <-d.done:
		return r, true
	}
}

// run is the display's goroutine: it applies events and draws when the
// model changed, every hudTick for the countdowns, and on resize, at most
// once every hudFrameGap.
func (d *hudDisplay) run() {
	defer close(d.done)
	defer d.sub.Close()
	defer d.erase() // leave the terminal as we found it
	if d.winch != nil {
		defer signal.Stop(d.winch)
	}
	tick := time.NewTicker(hudTick)
	defer tick.Stop()
	throttle := time.NewTimer(hudFrameGap)
	throttle.Stop()
	var (
		wait     <-chan time.Time // throttle.C while a frame waits for its turn
		lastDraw time.Time
		dirty    = true
		resized  bool
	)
	for {
		var count chan string // d.count while a server waits to be counted
		if len(d.toCount) > 0 && d.opts.Costs != nil {
			count = d.count
		}
		if dirty && wait == nil {
			if gap := hudFrameGap - d.opts.Now().Sub(lastDraw); gap > 0 {
				throttle.Reset(gap)
				wait = throttle.C
			} else {
				d.draw(resized)
				lastDraw = d.opts.Now()
				dirty, resized = false, false
			}
		}
		select {
		case <-d.stop:
			return
		case <-d.sub.Ready():
			d.drain()
			dirty = true
		case <-tick.C:
			dirty = true
			if d.recountIn > 0 {
				if d.recountIn--; d.recountIn == 0 {
					d.endpointsChanged()
				}
			}
		case <-d.opts.Resized:
			dirty, resized = true, true
		case <-d.poke:
			dirty = true
		case count <- d.firstToCount():
			d.toCount = d.toCount[1:]
		case c := <-d.counted:
			d.model.SetTokens(c.server, c.tokens)
			dirty = true
		case eps := <-d.endpoints:
			d.model.SetEndpoints(eps)
			dirty = true
		case reply := <-d.clearReq:
			reply <- d.clearBelow()
			lastDraw = d.opts.Now()
		case <-wait:
			wait = nil
		}
	}
}

// drain applies every queued event.
func (d *hudDisplay) drain() {
	for {
		e, ok, err := d.sub.TryRecv()
		if !ok || err != nil {
			return
		}
		d.apply(e)
	}
}

// apply applies e to the model and, when it changed a server's tools,
// puts the server in line to be counted; when it may have changed what
// the gateway's endpoints list (tools, servers, the config), it asks for
// them to be counted again.
func (d *hudDisplay) apply(e events.Event) {
	d.model.Apply(e)
	switch p := e.Payload.(type) {
	case manager.Connected:
	case manager.ItemsChanged:
		if p.Of != events.KindToolsChanged {
			return
		}
	case manager.Removed, manager.Disabled, manager.Disconnected, manager.Failed:
		d.endpointsChanged()
		d.recountIn = endpointRecountTicks
		return
	default:
		if e.Kind == events.KindConfigApplied {
			d.endpointsChanged()
		}
		return
	}
	d.endpointsChanged()
	if !slices.Contains(d.toCount, e.Server) {
		d.toCount = append(d.toCount, e.Server)
	}
}

// firstToCount is the server next in line to be counted ("" for none:
// the send is then disabled).
func (d *hudDisplay) firstToCount() string {
	if len(d.toCount) == 0 {
		return ""
	}
	return d.toCount[0]
}

// frame renders the block for a terminal of cols×rows: at most half the
// rows, each line one column short of the width (a character in the last
// column leaves some terminals waiting to wrap), a rule last.
func (d *hudDisplay) frame(cols, rows int) []string {
	if d.opts.Metrics != nil {
		d.model.UpdateMetrics(d.opts.Metrics)
	}
	lines := hud.Lines(d.model.View(d.opts.Now()), hud.Layout{
		Width:     cols - 1,
		MaxLines:  rows/2 - 1,
		Missed:    d.model.Missed(),
		Clients:   d.model.Clients(),
		Endpoints: d.model.Endpoints(),
	})
	return append(lines, strings.Repeat("─", cols-1))
}

// draw writes the frame if it differs from the last one, laying the block
// out anew if its height or the terminal's size changed. Disabled, or on a
// terminal too small, it erases the block instead.
func (d *hudDisplay) draw(resized bool) {
	cols, rows, err := d.opts.Size()
	if !d.enabled.Load() || err != nil || cols < hudMinCols || rows < hudMinRows {
		d.erase()
		return
	}
	lines := d.frame(cols, rows)
	var b strings.Builder
	if resized || len(lines) != d.shown || cols != d.cols || rows != d.rows {
		d.layout(&b, len(lines), cols, rows, resized)
	}
	b.WriteString(escSave)
	for i, l := range lines {
		fmt.Fprintf(&b, "\x1b[%d;1H%s%s", i+1, escEraseLine, l)
	}
	b.WriteString(escRestore)
	if b.String() == d.last {
		return
	}
	d.last = b.String()
	_, _ = io.WriteString(d.opts.Out, d.last)
}

// layout appends what moves the scroll region to below a block of h rows.
// Rows the block gives back are cleared; rows it takes are made room for
// by moving the cursor up (RI, scrolling the region down at its top) and
// back down, so the cursor's line stays below the block.
func (d *hudDisplay) layout(b *strings.Builder, h, cols, rows int, resized bool) {
	had := d.shown
	if had > 0 && (resized || cols != d.cols || rows != d.rows) {
		// Terminals keep, reset or clip the region on resize, and some move
		// or rewrap what is on the screen, the old block with it: start
		// over on a screen cleared above the cursor's line.
		b.WriteString(escSave + escResetRegion + escRestore)
		b.WriteString(escSave + escCursorUp + escEraseLine + escEraseAbove + escRestore)
		had = 0
	}
	if d.shown > h {
		b.WriteString(escSave)
		for r := h + 1; r <= min(d.shown, rows); r++ {
			fmt.Fprintf(b, "\x1b[%d;1H%s", r, escEraseLine)
		}
		b.WriteString(escRestore)
	}
	if grow := h - had; grow > 0 {
		b.WriteString(strings.Repeat(escReverseLine, grow))
		fmt.Fprintf(b, "\x1b[%dB", grow)
	}
	// DECSTBM homes the cursor: keep it where it is.
	fmt.Fprintf(b, "%s\x1b[%d;%dr%s", escSave, h+1, rows, escRestore)
	d.shown, d.cols, d.rows = h, cols, rows
}

// erase removes the block and gives the whole screen back to scrolling:
// its rows are deleted (DL), so what was below it moves up into them
// rather than leaving them blank, and the cursor moves up with its line.
func (d *hudDisplay) erase() {
	if d.shown == 0 {
		return
	}
	h := min(d.shown, d.rows)
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s\x1b[1;1H\x1b[%dM%s\x1b[%dA", escSave, escResetRegion, h, escRestore, h)
	_, _ = io.WriteString(d.opts.Out, b.String())
	d.shown, d.last = 0, ""
}

// clearBelow is Ctrl-L with the block shown: erase everything under the
// block, leave the cursor at the top of the scroll region for readline to
// redraw its line there, and draw the block. It reports whether the block
// is shown (if not, readline clears the screen itself).
func (d *hudDisplay) clearBelow() bool {
	if d.shown == 0 {
		return false
	}
	_, _ = fmt.Fprintf(d.opts.Out, "\x1b[%d;1H%s", d.shown+1, escEraseBelow)
	d.last = ""
	d.draw(false)
	return d.shown > 0
}

// ttyWriter serializes writes to the terminal: readline's output, logs,
// print and HUD frames all take mu, one Write at a time.
type ttyWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (t ttyWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w.Write(p)
}

// terminalHUD sets the HUD up when stdout is a terminal and mcpvisor runs
// without -e: it returns stdout and stderr wrapped in one ttyWriter lock and
// the HUD's options; otherwise the writers unchanged and nil. The block is
// shown at start with --hud, or at an interactive REPL unless --no-hud.
func terminalHUD(cfg config, interactive bool, stdout, stderr io.Writer) (io.Writer, io.Writer, *hudOptions) {
	f, ok := stdout.(*os.File)
	if cfg.hasCode || !ok || !term.IsTerminal(int(f.Fd())) {
		return stdout, stderr, nil
	}
	mu := new(sync.Mutex)
	out, errOut := ttyWriter{mu: mu, w: stdout}, ttyWriter{mu: mu, w: stderr}
	fd := int(f.Fd())
	return out, errOut, &hudOptions{
		Out:     out,
		Size:    func() (int, int, error) { return term.GetSize(fd) },
		Enabled: cfg.hud == hudOn || (cfg.hud == hudAuto && interactive),
		Config:  configHint(cfg.file),
	}
}
