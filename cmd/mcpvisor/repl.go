package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chzyer/readline"
	"github.com/mcpvisor/mcpvisor/luaapi"
)

// chunker gathers lines until they form a complete Lua chunk, continuing
// while the parse error is at end of input (like the standalone lua REPL).
type chunker struct {
	lines []string
}

// add appends a line and returns the chunk when it is complete.
func (c *chunker) add(line string) (chunk string, complete bool) {
	c.lines = append(c.lines, line)
	if luaapi.Incomplete(strings.Join(c.lines, "\n")) {
		return "", false
	}
	return c.flush(), true
}

// flush returns the pending lines as a chunk and starts a new one.
func (c *chunker) flush() string {
	src := strings.Join(c.lines, "\n")
	c.lines = nil
	return src
}

// reset drops the pending lines (Ctrl-C at a continuation prompt).
func (c *chunker) reset() {
	c.lines = nil
}

func (c *chunker) pending() bool { return len(c.lines) > 0 }

// runChunk runs one REPL chunk: a bare expression prints its value.
func runChunk(ctx context.Context, rt *luaapi.Runtime, src string, stdout, stderr io.Writer) bool {
	if strings.TrimSpace(src) == "" {
		return true
	}
	res, err := rt.Exec(ctx, luaapi.ExprOrChunk(src), "stdin")
	if err != nil {
		printError(stderr, err)
		return false
	}
	printResult(stdout, res)
	return true
}

// runREPL is the interactive loop on a terminal. Its lines come through a
// console, which also lets a server's question (an elicitation the person
// is to answer) take the terminal, even from under a half-typed line.
func runREPL(ctx context.Context, h *host, stdin io.Reader, stdout, stderr io.Writer) int {
	// readline wraps Stdin in a reader whose Close does not reach ours, and
	// its Close waits for the pending read: close ours first, or exiting
	// after a Ctrl-D hangs.
	tty := readline.NewCancelableStdin(ttyReader{os.Stdin})
	shared := &editorState{}
	rl, err := readline.NewEx(replEditorConfig(tty, stdout, stderr, shared, completer{rt: h.rt, off: shared.asking}, h.hud.filterKey))
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: cannot start the REPL: %v\n", err)
		return 1
	}
	// Everything printed while a line is typed (logs, hooks' print, a
	// question) goes through readline, which redraws the prompt and the
	// line being typed. From the moment a line is read there is no prompt:
	// output goes straight out. (Readline's writer would redraw the prompt
	// until its terminal goroutine notices the line is read, which under
	// load can take long enough to put a stray "mcp> " before a chunk's
	// output.)
	atPrompt := func(on bool) {
		if on {
			h.logOut.set(rl.Stderr())
			h.out.set(rl.Stdout())
		} else {
			h.logOut.set(stderr)
			h.out.set(stdout)
		}
	}
	con := newConsole(readlineEditor{rl}, shared, consoleOptions{
		out:      h.out,
		atPrompt: atPrompt,
		// A Ctrl-C read while no line was asked for: a question gave up
		// the line it was reading while a chunk runs.
		interrupt: func() { h.interruptChunk() },
		closeEditor: func() {
			tty.Close()
			rl.Close()
		},
	})
	if h.prompter != nil {
		h.prompter.attach(con)
	}
	defer func() {
		if h.prompter != nil {
			h.prompter.attach(nil)
		}
		con.close()
		atPrompt(false)
	}()
	if !h.hud.showing() { // the HUD says what the banner would
		fmt.Fprintln(stdout, "mcpvisor REPL — Lua with mcp_* functions. Ctrl-D exits; try mcp_status() or mcp_tools().")
		if h.logPath != "" {
			fmt.Fprintf(stdout, "Logs go to %s; warnings and errors show here too.\n", h.logPath)
		}
	}

	var c chunker
	for ctx.Err() == nil {
		prompt := "mcp> "
		if c.pending() {
			prompt = ">> "
		}
		line, err := con.replLine(ctx, prompt)
		switch {
		case errors.Is(err, readline.ErrInterrupt):
			c.reset() // Ctrl-C at the prompt drops the pending input
			continue
		case errors.Is(err, io.EOF):
			return 0
		case ctx.Err() != nil:
			return 0
		case err != nil:
			fmt.Fprintf(stderr, "error: %v\n", err)
			return 1
		}
		src, ok := c.add(line)
		if !ok {
			continue
		}
		cctx, cancel := context.WithCancel(ctx)
		h.chunk.set(cancel)
		runChunk(cctx, h.rt, src, stdout, stderr)
		h.chunk.set(nil)
		cancel()
	}
	return 0
}

// replEditorConfig is the REPL's line editor reading in: history, Ctrl-C
// and Ctrl-D as the REPL wants them, output to stdout and stderr, and the
// console's listener.
func replEditorConfig(in io.ReadCloser, stdout, stderr io.Writer, shared *editorState, complete readline.AutoCompleter, filter func(rune) (rune, bool)) *readline.Config {
	return &readline.Config{
		Stdin:             in,
		Prompt:            "mcp> ",
		HistoryFile:       historyFile(),
		InterruptPrompt:   "^C",
		EOFPrompt:         "",
		HistorySearchFold: true,
		// The console records the REPL's lines; a question's answers
		// (names, addresses) stay out of the history file.
		DisableAutoSaveHistory: true,
		AutoComplete:           complete,
		Listener:               shared.listener(),
		// Through the terminal's lock, which HUD frames take too.
		Stdout:              stdout,
		Stderr:              stderr,
		FuncFilterInputRune: filter,
	}
}

// ttyReader is the terminal as readline reads it. Between lines readline
// leaves raw mode, so a Ctrl-D typed while a chunk runs reaches us as an
// end of file, after which readline would never read again and the REPL
// would freeze. On a terminal that EOF is the Ctrl-D key: hand it over as
// that key, and Ctrl-D then exits at the next prompt, as it does there.
type ttyReader struct{ f *os.File }

func (t ttyReader) Read(p []byte) (int, error) {
	n, err := t.f.Read(p)
	if n == 0 && err == io.EOF && len(p) > 0 {
		p[0] = 4 // Ctrl-D
		return 1, nil
	}
	return n, err
}

func (t ttyReader) Close() error { return nil }

// historyFile is $XDG_STATE_HOME/mcpvisor/history (or ~/.local/state/…).
func historyFile() string {
	dir, err := stateDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "history")
}
