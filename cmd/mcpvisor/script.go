package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// defaultWait is how long a run that is not interactive gives the servers
// to settle before its code starts. The built-in demo server and most
// local stdio servers connect well within a second, and a server started
// through npx from its cache within a few; five seconds covers those,
// while a server that never answers (its attempt may run a minute) holds a
// script back no longer than that. A script that needs more calls
// mcp_wait itself.
const defaultWait = 5 * time.Second

// quietLevel is the log level of a run that prints results (-e, a
// script) unless --log-level says otherwise: its output, not the
// lifecycle, is what its user is after.
const quietLevel = "warn"

// runScript records `run FILE [args]`. rest is what follows run once its
// flags are parsed: the file, then the script's own arguments. The script
// sees the command line as lua shows it: the file at arg[0], its arguments
// from arg[1], the program and everything before the file below 0.
func (c *config) runScript(args, rest []string) error {
	if len(rest) == 0 {
		return errors.New("run needs a script: mcpvisor run FILE.lua [args] (or - for stdin)")
	}
	at := len(args) - len(rest)
	c.script = rest[0]
	c.argv = append(append([]string{os.Args[0]}, args[:at]...), rest...)
	c.scriptIndex = 1 + at
	return nil
}

// settle waits until every declared server has settled
// (manager.Status.Settled), bound has passed or ctx ends, so that code
// run right after startup sees the servers connected or knows why not.
// Every change of a server's state is an event, published after its
// status: each event is the moment to look again.
func (h *host) settle(ctx context.Context, bound time.Duration) {
	if bound <= 0 {
		return
	}
	sub := h.bus.Subscribe(events.SubscribeOptions{Passive: []events.Kind{events.KindToolCall}})
	defer sub.Close()
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	for {
		pending := unsettled(h.mgr.Statuses())
		if len(pending) == 0 {
			return
		}
		if _, err := sub.Recv(ctx); err != nil {
			h.log.Info("starting before every server is up", "waited", bound, "connecting", strings.Join(pending, ","))
			return
		}
	}
}

// unsettled names the servers that have not settled yet.
func unsettled(list []manager.Status) []string {
	var names []string
	for _, st := range list {
		if !st.Settled() {
			names = append(names, st.Name)
		}
	}
	return names
}

// runScript runs a Lua program as one chunk, as lua runs a file: the
// file of `run FILE`, or stdin ("-", or not a terminal). Locals live to
// its end and what it returns is not printed. An error is reported as
// file:line: message, and the exit code is 1.
func (h *host) runScript(ctx context.Context, cfg config, stdin io.Reader, stderr io.Writer) int {
	name, argv, at := cfg.script, cfg.argv, cfg.scriptIndex
	if name == "" { // piped: as if run -
		name, argv, at = "-", []string{os.Args[0], "-"}, 1
	}
	if cfg.script == "" { // piped: run as it arrives
		if err := h.rt.SetArg(argv, at); err != nil {
			printError(stderr, err)
			return 1
		}
		return h.runPiped(ctx, stdin, stderr)
	}
	var src string
	var err error
	if name == "-" {
		src, err = readAll(ctx, stdin)
		name = "stdin"
	} else {
		var b []byte
		b, err = os.ReadFile(name)
		src = string(b)
	}
	if err != nil {
		if ctx.Err() != nil {
			return 1
		}
		fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
		return 1
	}
	if err := h.rt.SetArg(argv, at); err != nil {
		printError(stderr, err)
		return 1
	}
	if _, err := h.rt.Exec(ctx, skipShebang(src), name); err != nil {
		printError(stderr, err)
		return 1
	}
	return 0
}

// inputPause is how long piped input must stay quiet before what has
// arrived runs on its own. A script written to the pipe at once (cat,
// printf, a heredoc) arrives with its end well within it and runs as one
// chunk; a program that drives mcpvisor line by line, waiting for each
// answer, gets each answer.
const inputPause = 100 * time.Millisecond

// runPiped runs piped stdin as one script, as lua does, when it arrives at
// once; when its writer pauses at a point where what has arrived is
// complete Lua, that part runs as its own chunk (its locals end with it),
// so a program can drive mcpvisor through a pipe. Values are not printed
// (use print); an error is reported and the exit code is 1, the rest
// still runs.
func (h *host) runPiped(ctx context.Context, stdin io.Reader, stderr io.Writer) int {
	data := make(chan []byte)
	go func() { // ends at EOF; it may outlive a cancelled run until then
		defer close(data)
		buf := make([]byte, 32<<10)
		for {
			n, err := stdin.Read(buf)
			if n > 0 {
				data <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	code, first := 0, true
	var pending strings.Builder
	run := func() {
		src := pending.String()
		pending.Reset()
		if strings.TrimSpace(src) == "" {
			return
		}
		if first {
			src, first = skipShebang(src), false
		}
		if _, err := h.rt.Exec(ctx, src, "stdin"); err != nil {
			printError(stderr, err)
			code = 1
		}
	}
	quiet := time.NewTimer(inputPause)
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return 1
		case b, ok := <-data:
			if !ok {
				run()
				return code
			}
			pending.Write(b)
			quiet.Reset(inputPause)
		case <-quiet.C:
			if pending.Len() > 0 && !luaapi.Incomplete(pending.String()) {
				run()
			}
		}
	}
}

// skipShebang blanks a first line starting with #, as lua does, so a
// script can be an executable file; the line count stays.
func skipShebang(src string) string {
	if !strings.HasPrefix(src, "#") {
		return src
	}
	if i := strings.IndexByte(src, '\n'); i >= 0 {
		return src[i:]
	}
	return ""
}

// readAll reads r to its end on a goroutine of its own, so that ctx (a
// signal) ends the wait even while r stays open. That goroutine ends at
// EOF; it may outlive a cancelled wait until then, while the process
// exits.
func readAll(ctx context.Context, r io.Reader) (string, error) {
	type read struct {
		b   []byte
		err error
	}
	ch := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(r)
		ch <- read{b, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case got := <-ch:
		if got.err != nil {
			return "", fmt.Errorf("reading stdin: %w", got.err)
		}
		return string(got.b), nil
	}
}
