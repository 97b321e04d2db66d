package main

// The console decides who gets the line being read: the REPL or a
// server's question. These tests drive it with a fake editor whose every
// change of prompt or text is reported, and whose lines the test types.

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/chzyer/readline"
	"github.com/stretchr/testify/require"
)

// fakeEditor reports each Readline (with its prompt and text) on reads,
// each change on changes, and takes keys sent on lines: their text is
// typed after what the line holds, then Enter (or the error: Ctrl-C, …)
// ends the read, as readline's buffer does.
type fakeEditor struct {
	reads   chan string // "prompt|text" at each Readline
	changes chan string // "prompt:…", "text:…", "refresh"
	lines   chan lineResult
	closed  sync.Once

	mu sync.Mutex
	// mu guards prompt, text and history.
	prompt, text string
	history      []string
}

func newFakeEditor() *fakeEditor {
	return &fakeEditor{reads: make(chan string, 16), changes: make(chan string, 64), lines: make(chan lineResult)}
}

func (e *fakeEditor) Readline() (string, error) {
	e.mu.Lock()
	e.reads <- e.prompt + "|" + e.text
	e.mu.Unlock()
	res, ok := <-e.lines
	e.mu.Lock()
	line := e.text + res.line
	e.text = ""
	e.mu.Unlock()
	if !ok {
		return "", io.EOF
	}
	if res.err != nil {
		return "", res.err
	}
	return line, nil
}

func (e *fakeEditor) SetPrompt(p string) {
	e.mu.Lock()
	e.prompt = p
	e.mu.Unlock()
	e.changes <- "prompt:" + p
}

func (e *fakeEditor) SetBuffer(s string) {
	e.mu.Lock()
	e.text = s
	e.mu.Unlock()
	e.changes <- "text:" + s
}

func (e *fakeEditor) Refresh() { e.changes <- "refresh" }

func (e *fakeEditor) SaveHistory(line string) {
	e.mu.Lock()
	e.history = append(e.history, line)
	e.mu.Unlock()
}

func (e *fakeEditor) close() { e.closed.Do(func() { close(e.lines) }) }

// typeLine is the person typing keys and pressing Enter (or Ctrl-C) on the
// line being read.
func (e *fakeEditor) typeLine(t *testing.T, line string, err error) {
	t.Helper()
	select {
	case e.lines <- lineResult{line, err}:
	case <-time.After(10 * time.Second):
		t.Fatal("no line is being read")
	}
}

func next(t *testing.T, ch <-chan string, what string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: nothing came", what)
		return ""
	}
}

// none requires that nothing came on ch once every goroutine of the test's
// bubble has blocked: whatever would come has come by then.
func none(t *testing.T, ch <-chan string, what string) {
	t.Helper()
	synctest.Wait()
	select {
	case s := <-ch:
		t.Fatalf("%s: got %q", what, s)
	default:
	}
}

type consoleHarness struct {
	ed         *fakeEditor
	shared     *editorState
	c          *console
	interrupts chan string
}

func newConsoleHarness(t *testing.T) *consoleHarness {
	h := &consoleHarness{ed: newFakeEditor(), shared: &editorState{}, interrupts: make(chan string, 4)}
	h.c = newConsole(h.ed, h.shared, consoleOptions{out: io.Discard, interrupt: func() { h.interrupts <- "interrupt" }, closeEditor: h.ed.close})
	t.Cleanup(h.c.close)
	return h
}

// readAsync reads a line in the background; the result comes on the channel.
func readAsync(ctx context.Context, read func(context.Context, string) (string, error), prompt string) <-chan lineResult {
	ch := make(chan lineResult, 1)
	go func() {
		line, err := read(ctx, prompt)
		ch <- lineResult{line, err}
	}()
	return ch
}

func got(t *testing.T, ch <-chan lineResult) lineResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no line came")
		return lineResult{}
	}
}

// A question takes the line the REPL is reading, half-typed text and all:
// the text is set aside, the question's prompt shown, its answer kept out
// of the REPL and its history; then the REPL reads again with its text.
func TestConsoleQuestionTakesTheLineBeingRead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newConsoleHarness(t)
		ctx := context.Background()
		repl := readAsync(ctx, h.c.replLine, "mcp> ")
		require.Equal(t, "mcp> |", next(t, h.ed.reads, "the REPL's read"))
		require.Equal(t, "prompt:mcp> ", next(t, h.ed.changes, "the REPL's prompt"))
		typed := "return 6"
		h.shared.typed.Store(&typed) // the listener, as keys are typed

		tu, err := h.c.take(ctx)
		require.NoError(t, err)
		require.True(t, h.shared.asking())
		answer := readAsync(ctx, tu.readLine, "name: ")
		require.Equal(t, "prompt:name: ", next(t, h.ed.changes, "the question's prompt"))
		require.Equal(t, "text:", next(t, h.ed.changes, "the typed text set aside"))
		h.ed.typeLine(t, "Ada", nil)
		require.Equal(t, lineResult{line: "Ada"}, got(t, answer))
		none(t, h.ed.reads, "the REPL waits while the question has the terminal")

		tu.done()
		require.False(t, h.shared.asking())
		require.Equal(t, "mcp> |return 6", next(t, h.ed.reads, "the REPL's read, its text restored"))
		h.ed.typeLine(t, "*7", nil)
		require.Equal(t, lineResult{line: "return 6*7"}, got(t, repl))
		require.Equal(t, []string{"return 6*7"}, h.ed.history, "answers stay out of the history")
	})
}

// A question that gives up (its server stopped waiting) gives the line
// it was reading back to the REPL, prompt and set-aside text restored, once
// the question is done.
func TestConsoleQuestionGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newConsoleHarness(t)
		ctx := context.Background()
		for _, answerFirst := range []bool{false, true} {
			repl := readAsync(ctx, h.c.replLine, "mcp> ")
			next(t, h.ed.reads, "the REPL's read")
			next(t, h.ed.changes, "the REPL's prompt")
			typed := "x = 1"
			h.shared.typed.Store(&typed)

			tu, err := h.c.take(ctx)
			require.NoError(t, err)
			if answerFirst { // the question's first answer, then it gives up on the second
				answer := readAsync(ctx, tu.readLine, "name: ")
				next(t, h.ed.changes, "the question's prompt")
				require.Equal(t, "text:", next(t, h.ed.changes, "the typed text set aside"))
				h.ed.typeLine(t, "Ada", nil)
				require.Equal(t, lineResult{line: "Ada"}, got(t, answer))
			}
			qctx, cancel := context.WithCancel(ctx)
			answer := readAsync(qctx, tu.readLine, "age: ")
			if answerFirst {
				require.Equal(t, "age: |", next(t, h.ed.reads, "the question's read"))
				next(t, h.ed.changes, "the question's prompt")
			} else {
				require.Equal(t, "prompt:age: ", next(t, h.ed.changes, "the question's prompt"))
				require.Equal(t, "text:", next(t, h.ed.changes, "the typed text set aside"))
			}
			cancel()
			require.ErrorIs(t, got(t, answer).err, context.Canceled)
			none(t, h.ed.changes, "the question's line stays until the question is done")
			tu.done()
			require.Equal(t, "prompt:mcp> ", next(t, h.ed.changes, "the REPL's prompt again"))
			require.Equal(t, "text:x = 1", next(t, h.ed.changes, "the REPL's text again"))
			h.ed.typeLine(t, "0", nil)
			require.Equal(t, lineResult{line: "x = 10"}, got(t, repl))
		}
	})
}

// While a chunk runs nobody asks for a line: a question asked then and
// abandoned leaves a read that nobody wants. Ctrl-C there interrupts the
// chunk; a line typed there is the REPL's next.
func TestConsoleLineReadForNobody(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newConsoleHarness(t)
		ctx := context.Background()
		for _, typed := range []lineResult{{err: readline.ErrInterrupt}, {line: "typed ahead"}} {
			tu, err := h.c.take(ctx)
			require.NoError(t, err)
			qctx, cancel := context.WithCancel(ctx)
			answer := readAsync(qctx, tu.readLine, "q: ")
			require.Equal(t, "q: |", next(t, h.ed.reads, "the question's read"))
			next(t, h.ed.changes, "the question's prompt")
			cancel()
			got(t, answer)
			tu.done()
			require.Equal(t, "prompt:", next(t, h.ed.changes, "nobody's prompt"))
			next(t, h.ed.changes, "nobody's text")
			h.ed.typeLine(t, typed.line, typed.err)
			if typed.err != nil {
				require.Equal(t, "interrupt", next(t, h.interrupts, "the chunk interrupted"))
				continue
			}
			require.Equal(t, lineResult{line: "typed ahead"}, got(t, readAsync(ctx, h.c.replLine, "mcp> ")))
			none(t, h.ed.reads, "the kept line answered without a read")
		}
	})
}

// Questions take the terminal one at a time.
func TestConsoleOneQuestionAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newConsoleHarness(t)
		ctx := context.Background()
		first, err := h.c.take(ctx)
		require.NoError(t, err)
		second := make(chan *turn, 1)
		go func() {
			tu, err := h.c.take(ctx)
			if err == nil {
				second <- tu
			}
		}()
		synctest.Wait()
		select {
		case <-second:
			t.Fatal("a second question took the terminal from the first")
		default:
		}
		first.done()
		first.done() // once is enough
		select {
		case tu := <-second:
			tu.done()
		case <-time.After(10 * time.Second):
			t.Fatal("the second question never got the terminal")
		}

		short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancel()
		held, err := h.c.take(ctx)
		require.NoError(t, err)
		_, err = h.c.take(short)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		held.done()

		h.c.close()
		_, err = h.c.take(ctx)
		require.True(t, errors.Is(err, errConsoleClosed))
		_, err = h.c.replLine(ctx, "mcp> ")
		require.True(t, errors.Is(err, errConsoleClosed))
	})
}
