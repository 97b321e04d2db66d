package main

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"github.com/chzyer/readline"
)

// lineEditor is what the console needs of the line editor (readline's
// Instance, through readlineEditor).
type lineEditor interface {
	// Readline reads one line; only the console's reader calls it.
	Readline() (string, error)
	// SetPrompt, SetBuffer and Refresh change what the line being read
	// shows: its prompt and its text. They may be called while Readline
	// waits.
	SetPrompt(prompt string)
	SetBuffer(text string)
	Refresh()
	// SaveHistory records a line in the history; it is called only while
	// no line is read.
	SaveHistory(line string)
}

// readlineEditor is a readline Instance as a lineEditor.
type readlineEditor struct{ rl *readline.Instance }

func (e readlineEditor) Readline() (string, error) { return e.rl.Readline() }
func (e readlineEditor) SetPrompt(p string)        { e.rl.SetPrompt(p) }
func (e readlineEditor) SetBuffer(s string)        { e.rl.Operation.SetBuffer(s) }
func (e readlineEditor) Refresh()                  { e.rl.Refresh() }
func (e readlineEditor) SaveHistory(line string)   { _ = e.rl.SaveHistory(line) }

// errConsoleClosed is the answer to a line asked of a console that is
// closed: the REPL has ended.
var errConsoleClosed = errors.New("the REPL has ended")

// console is the REPL's terminal and the only reader of it: the REPL asks
// it for lines, and so does a server's question (an elicitation) when the
// person at the REPL is to answer it. A question has the terminal to
// itself, one at a time, from the moment it takes its turn until it is
// done; meanwhile the REPL's next line waits. A question may come while
// the REPL waits for a line, with half a line typed: that same read is
// handed to the question (its prompt shown, the typed text set aside), and
// the REPL gets it back, text restored, once the question is done.
//
// One goroutine, run, owns which line goes to whom; another, read, calls
// the editor's Readline one line at a time when run says so. A line read
// while nobody asks for one (the REPL is running a chunk, and a question
// that was being asked gave up) is kept for the REPL's next request, as
// typing ahead is; a Ctrl-C read then interrupts the chunk instead.
type console struct {
	ed lineEditor
	// out is where questions print: the host's stdout, which goes through
	// the editor while a line is read.
	out io.Writer
	// atPrompt is told when a read starts and ends (the host routes
	// output through the editor while a line is read).
	atPrompt func(reading bool)
	// interrupt handles a Ctrl-C typed while nobody asked for a line.
	interrupt func()
	// closeEditor ends a Readline in progress (close waits for it).
	closeEditor func()

	shared *editorState

	requests chan *lineRequest
	cancels  chan *lineRequest
	turns    chan bool       // a question took (true) or gave back (false) the terminal
	taken    chan struct{}   // capacity 1: held by the question that has the terminal
	starts   chan struct{}   // capacity 1: run asks read for one line
	results  chan lineResult // read's lines, to run
	stop     chan struct{}   // closed by close
	done     chan struct{}   // closed when run has exited
	readDone chan struct{}   // closed when read has exited
}

// asker says who asks for a line.
type asker int

const (
	askedByREPL asker = iota
	askedByQuestion
)

type lineRequest struct {
	by     asker
	prompt string
	reply  chan lineResult // capacity 1: run never waits on the asker
}

type lineResult struct {
	line string
	err  error
}

// consoleOptions are the console's collaborators; see the fields of
// console. atPrompt, interrupt and closeEditor may be nil.
type consoleOptions struct {
	out         io.Writer
	atPrompt    func(bool)
	interrupt   func()
	closeEditor func()
}

// editorState is what the console shares with the editor's callbacks
// (its listener, the REPL's completer), which run on the editor's
// goroutines and exist before the console does.
type editorState struct {
	typed    atomic.Pointer[string] // the text of the line being typed
	question atomic.Bool            // a question has the terminal
}

// listener is the editor's Listener: it keeps the text being typed, which
// the console sets aside when a question takes over the line.
func (e *editorState) listener() readline.Listener {
	return readline.FuncListener(func(line []rune, pos int, key rune) ([]rune, int, bool) {
		if key != 0 { // 0 is the call made as a read starts, without the line
			s := string(line)
			e.typed.Store(&s)
		}
		return nil, 0, false
	})
}

// text is the line being typed.
func (e *editorState) text() string {
	if s := e.typed.Load(); s != nil {
		return *s
	}
	return ""
}

// asking reports whether a question has the terminal.
func (e *editorState) asking() bool { return e.question.Load() }

func newConsole(ed lineEditor, shared *editorState, o consoleOptions) *console {
	c := &console{ed: ed, shared: shared, out: o.out, atPrompt: o.atPrompt, interrupt: o.interrupt, closeEditor: o.closeEditor,
		requests: make(chan *lineRequest), cancels: make(chan *lineRequest), turns: make(chan bool),
		taken: make(chan struct{}, 1), starts: make(chan struct{}, 1), results: make(chan lineResult),
		stop: make(chan struct{}), done: make(chan struct{}), readDone: make(chan struct{})}
	if c.atPrompt == nil {
		c.atPrompt = func(bool) {}
	}
	if c.interrupt == nil {
		c.interrupt = func() {}
	}
	if c.closeEditor == nil {
		c.closeEditor = func() {}
	}
	go c.run()
	go c.read()
	return c
}

// close stops the console: a line asked for after it, or not yet read,
// fails with errConsoleClosed. It waits for both goroutines.
func (c *console) close() {
	select {
	case <-c.stop:
		return
	default:
	}
	close(c.stop)
	<-c.done
	c.closeEditor()
	<-c.readDone
}

// replLine is the REPL's next line.
func (c *console) replLine(ctx context.Context, prompt string) (string, error) {
	return c.line(ctx, askedByREPL, prompt)
}

// line asks run for a line and waits for it, or for ctx to end (then the
// request is withdrawn, and a line read for it after all is dropped).
func (c *console) line(ctx context.Context, by asker, prompt string) (string, error) {
	req := &lineRequest{by: by, prompt: prompt, reply: make(chan lineResult, 1)}
	select {
	case c.requests <- req:
	case <-ctx.Done():
		return "", context.Cause(ctx)
	case <-c.done:
		return "", errConsoleClosed
	}
	select {
	case res := <-req.reply:
		return res.line, res.err
	case <-ctx.Done():
		select {
		case c.cancels <- req:
		case <-c.done:
		}
		return "", context.Cause(ctx)
	case <-c.done:
		return "", errConsoleClosed
	}
}

// turn is a question's hold on the terminal.
type turn struct {
	c    *console
	once atomic.Bool
}

// take waits until no other question has the terminal and takes it.
func (c *console) take(ctx context.Context) (*turn, error) {
	select {
	case c.taken <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	case <-c.done:
		return nil, errConsoleClosed
	}
	select {
	case c.turns <- true:
	case <-c.done:
		<-c.taken
		return nil, errConsoleClosed
	}
	c.shared.question.Store(true)
	return &turn{c: c}, nil
}

// Write prints for the question (through the editor while a line is read).
func (t *turn) Write(p []byte) (int, error) { return t.c.out.Write(p) }

// readLine reads the question's next answer.
func (t *turn) readLine(ctx context.Context, prompt string) (string, error) {
	return t.c.line(ctx, askedByQuestion, prompt)
}

// done gives the terminal back; the REPL gets its line again.
func (t *turn) done() {
	if t.once.Swap(true) {
		return
	}
	t.c.shared.question.Store(false)
	select {
	case t.c.turns <- false:
	case <-t.c.done:
	}
	<-t.c.taken
}

// read calls Readline each time run asks, and hands the line to run.
func (c *console) read() {
	defer close(c.readDone)
	for {
		select {
		case <-c.starts:
		case <-c.stop:
			return
		}
		c.atPrompt(true)
		line, err := c.ed.Readline()
		c.atPrompt(false)
		select {
		case c.results <- lineResult{line, err}:
		case <-c.stop:
			return
		}
	}
}

// lineState is what run owns.
type lineState struct {
	repl, question *lineRequest // who waits for a line
	held           bool         // a question has the terminal
	reading        bool         // read is in Readline
	shown          *lineRequest // whose prompt the line being read shows; nil for nobody's
	aside          string       // the REPL's half-typed line, set aside for a question
	kept           *lineResult  // a line read while nobody asked, for the REPL
}

// run decides, after every change, who gets the line being read and what
// it shows, and when to read the next.
func (c *console) run() {
	defer close(c.done)
	var s lineState
	for {
		select {
		case req := <-c.requests:
			if req.by == askedByREPL {
				s.repl = req
			} else {
				s.question = req
			}
		case req := <-c.cancels:
			if s.repl == req {
				s.repl = nil
			}
			if s.question == req {
				s.question = nil
			}
		case held := <-c.turns:
			s.held = held
		case res := <-c.results:
			s.reading = false
			c.deliver(&s, res)
		case <-c.stop:
			return
		}
		c.settle(&s)
	}
}

// deliver hands a line just read to whoever asks for it now: the
// question, else the REPL, else it is kept for the REPL (a Ctrl-C
// interrupts the running chunk instead). An answer typed to a question
// that gave up meanwhile is dropped: it was never meant for Lua.
func (c *console) deliver(s *lineState, res lineResult) {
	switch {
	case s.question != nil:
		s.question.reply <- res
		s.question = nil
	case s.shown != nil && s.shown.by == askedByQuestion:
	case s.repl != nil:
		c.toREPL(s, res)
	case errors.Is(res.err, readline.ErrInterrupt):
		c.interrupt()
	default:
		s.kept = &res
	}
}

// toREPL answers the REPL's request, recording its line in the history
// (a question's answers are never recorded).
func (c *console) toREPL(s *lineState, res lineResult) {
	if res.err == nil && res.line != "" {
		c.ed.SaveHistory(res.line)
	}
	s.repl.reply <- res
	s.repl = nil
}

// settle starts the next read, or makes the line being read show the
// prompt of whoever would get it.
func (c *console) settle(s *lineState) {
	if !s.reading {
		var next *lineRequest
		switch {
		case s.question != nil:
			next = s.question
		case s.held:
			return // the question is between two answers
		case s.repl != nil && s.kept != nil:
			res := *s.kept
			s.kept = nil
			c.toREPL(s, res)
			return
		case s.repl != nil:
			next = s.repl
		default:
			return
		}
		text := ""
		if next.by == askedByREPL {
			text, s.aside = s.aside, ""
		}
		c.ed.SetPrompt(next.prompt)
		if text != "" {
			c.ed.SetBuffer(text)
		}
		c.shared.typed.Store(&text)
		s.shown, s.reading = next, true
		c.starts <- struct{}{}
		return
	}
	var want *lineRequest
	switch {
	case s.question != nil:
		want = s.question
	case s.held:
		return // keep showing what is shown until the question asks again
	default:
		want = s.repl // nil: nobody's
	}
	if want == s.shown {
		return
	}
	c.retarget(s, want)
}

// retarget makes the line being read show want's prompt. Taken by a
// question, it is emptied and what was typed is set aside for the REPL;
// given back, the REPL's text is restored.
func (c *console) retarget(s *lineState, want *lineRequest) {
	fromQuestion := s.shown != nil && s.shown.by == askedByQuestion
	toQuestion := want != nil && want.by == askedByQuestion
	prompt := ""
	if want != nil {
		prompt = want.prompt
	}
	c.ed.SetPrompt(prompt)
	switch {
	case toQuestion:
		if !fromQuestion {
			s.aside = c.shared.text()
		}
		c.setText("")
	case fromQuestion:
		c.setText(s.aside)
		s.aside = ""
	default:
		c.ed.Refresh()
	}
	s.shown = want
}

// setText replaces the text of the line being read (and redraws it).
func (c *console) setText(text string) {
	c.ed.SetBuffer(text)
	c.shared.typed.Store(&text)
}
