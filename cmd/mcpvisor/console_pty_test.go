//go:build linux

package main

// The console with the real line editor on a pseudo-terminal: what a
// person sees when a server's question comes while they type at the REPL.

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/chzyer/readline"
	"github.com/hinshun/vt10x"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// openPTY opens a pseudo-terminal of cols×rows. Both ends stay in Go's
// poller (their descriptors are used through withFD, never Fd, which
// would make them blocking), so closing one ends a read in progress.
func openPTY(t *testing.T, cols, rows int) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	var n int
	withFD(t, master, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
			return err
		}
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN) // ptsname
		return err
	})
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	withFD(t, slave, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	})
	return master, slave
}

// withFD runs fn with f's descriptor, failing t on an error.
func withFD(t *testing.T, f *os.File, fn func(fd int) error) {
	t.Helper()
	require.NoError(t, fdDo(f, fn))
}

// fdDo runs fn with f's descriptor.
func fdDo(f *os.File, fn func(fd int) error) error {
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := raw.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// rawMode is readline's raw mode on a pty (it keeps output processing: \n
// is a new line). Readline enters and leaves it from its own goroutines.
type rawMode struct {
	f  *os.File
	mu sync.Mutex
	// mu guards saved.
	saved *readline.State
}

func (m *rawMode) enter() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fdDo(m.f, func(fd int) (err error) { m.saved, err = readline.MakeRaw(fd); return err })
}

func (m *rawMode) exit() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.saved == nil {
		return nil
	}
	return fdDo(m.f, func(fd int) error { return readline.Restore(fd, m.saved) })
}

// ptyREPL is the REPL's console and the terminal prompter, wired as
// runREPL wires them, on the slave end of a pty whose screen the test
// reads through a terminal emulator.
type ptyREPL struct {
	con      *console
	prompter *terminalPrompter
	screen   *emulated
}

func startPTYREPL(t *testing.T) *ptyREPL {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // the history file
	const cols, rows = 80, 24
	master, slave := openPTY(t, cols, rows)
	p := &process{t: t, stdin: master}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(&p.stdout, master)
	}()

	tty := readline.NewCancelableStdin(ttyReader{slave})
	shared := &editorState{}
	cfg := replEditorConfig(tty, slave, slave, shared, nil, nil)
	raw := &rawMode{f: slave}
	cfg.FuncMakeRaw, cfg.FuncExitRaw = raw.enter, raw.exit
	cfg.FuncIsTerminal = func() bool { return true }
	cfg.FuncGetWidth = func() int { return cols }
	cfg.FuncOnWidthChanged = func(func()) {} // the size is fixed
	rl, err := readline.NewEx(cfg)
	require.NoError(t, err)
	out := &swapWriter{w: slave}
	con := newConsole(readlineEditor{rl}, shared, consoleOptions{
		out: out,
		atPrompt: func(on bool) {
			if on {
				out.set(rl.Stdout())
			} else {
				out.set(slave)
			}
		},
		closeEditor: func() {
			tty.Close()
			rl.Close()
		},
	})
	prompter := newTerminalPrompter()
	prompter.browser = func() string { return "" }
	prompter.attach(con)
	t.Cleanup(func() {
		prompter.attach(nil)
		con.close()
		slave.Close()
		master.Close()
		<-copied
	})
	return &ptyREPL{con: con, prompter: prompter, screen: &emulated{t: t, p: p, vt: vt10x.New(vt10x.WithSize(cols, rows))}}
}

// cursorLine waits until the line the cursor is on reads want.
func (r *ptyREPL) cursorLine(what, want string) []string {
	r.screen.t.Helper()
	screen, _ := r.screen.wait(what, func(_ string, screen []string, cur vt10x.Cursor) bool {
		return screen[cur.Y] == want
	})
	return screen
}

// One question while a line is half typed at the REPL: the question takes
// the line, the person answers on it, and the REPL's line comes back as it
// was, to be finished. Ctrl-C at a question declines it.
func TestREPLQuestionOnATerminal(t *testing.T) {
	r := startPTYREPL(t)
	ctx := context.Background()
	form := &mcp.ElicitParams{Message: "Who are you?", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"name": map[string]any{"type": "string", "title": "Name"}}, "required": []any{"name"}}}

	repl := readAsync(ctx, r.con.replLine, "mcp> ")
	r.cursorLine("the REPL's prompt", "mcp>")
	r.screen.send("return 6")
	r.cursorLine("the half-typed line", "mcp> return 6")

	answer := make(chan *mcp.ElicitResult, 1)
	go func() {
		res, err := r.prompter.Elicit(ctx, ask.From{Server: "srv"}, form)
		if err != nil {
			res = &mcp.ElicitResult{Action: "error: " + err.Error()}
		}
		answer <- res
	}()
	screen := r.cursorLine("the question on the line", "Name (text, required):")
	require.NotContains(t, strings.Join(screen, "\n"), "return 6", "the typed text is set aside")
	r.screen.send("Ada\r")
	require.Equal(t, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, <-answer)
	screen = r.cursorLine("the REPL's line back", "mcp> return 6")
	require.Equal(t, []string{
		`── server "srv" asks ──`,
		"Who are you?",
		"(Enter keeps the [default] or leaves an optional field out; Ctrl-C declines.)",
		"Name (text, required): Ada",
		`── sent to server "srv" ──`,
		"mcp> return 6",
		"",
	}, screen[:7], "the half-typed line made way for the question and came back below it")

	r.screen.send("*7\r")
	require.Equal(t, lineResult{line: "return 6*7"}, got(t, repl))

	// Ctrl-C declines, and the REPL reads on.
	repl = readAsync(ctx, r.con.replLine, "mcp> ")
	r.cursorLine("the REPL's prompt", "mcp>")
	go func() {
		res, _ := r.prompter.Elicit(ctx, ask.From{Server: "srv"}, form)
		answer <- res
	}()
	r.cursorLine("the question on the line", "Name (text, required):")
	r.screen.send("\x03")
	require.Equal(t, "decline", (<-answer).Action)
	r.cursorLine("the REPL's prompt back", "mcp>")
	r.screen.send("1\r")
	require.Equal(t, lineResult{line: "1"}, got(t, repl))
}
