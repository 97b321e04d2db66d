package proc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/pipeio"
	"github.com/mcpvisor/mcpvisor/internal/redact"
)

// Process is one stdio server: a child in its own process group whose
// stdin, stdout and stderr are pipes we own (not exec's), so that reading
// stdout to EOF never races with Wait, and a grandchild holding a pipe can
// never wedge us.
//
// Its close sequence is: close stdin, wait up to grace; SIGTERM to
// the group, wait up to grace; SIGKILL to the group; reap. A final SIGKILL to
// the group always follows, so grandchildren die too.
type Process struct {
	server  string
	log     *slog.Logger
	secrets *redact.Secrets
	cmd     *exec.Cmd // the child: the server's shim, or the server itself
	pid     int       // the server's: the id of its process group
	group   processGroup
	stdin   *os.File // write end
	stdout  *os.File // read end
	stderr  *os.File // read end
	// toIn and fromOut write stdin and read stdout (see pipeio).
	toIn    io.Writer
	fromOut io.Reader
	out     *stdoutReader
	tail    *tailBuffer
	grace   time.Duration

	reaped  chan struct{} // closed once the child is reaped
	waitErr error         // valid after reaped is closed
	// exited is closed once the child is reaped and its last stderr lines
	// are read (or stderrGrace has passed): ExitError has its answer.
	exited chan struct{}
	// selfExit is set when the child was reaped, or its stdout ended,
	// before the host began to stop it: it went away on its own.
	selfExit atomic.Bool
	// stopping is set when Close begins.
	stopping atomic.Bool
	// noticesRead counts the log and progress notifications read from the
	// server (NoticesRead).
	noticesRead atomic.Uint64

	drained   chan struct{} // closed when the stderr drain ends
	closeOnce sync.Once
	closed    chan struct{} // closed when the close sequence has finished
}

// Config says what to start and how to stop it.
type Config struct {
	// Server names the server in logs.
	Server string
	// Command is the program and its arguments; required.
	Command []string
	// Env is added to the host's environment.
	Env map[string]string
	// Dir is the working directory. If empty, the host's.
	Dir string
	// Grace is how long Close waits after closing stdin, and again after
	// SIGTERM, before escalating. If zero, it does not wait.
	Grace time.Duration
	// MaxLine caps a line on stdout: a longer one ends the session with a
	// protocol error. If zero, DefaultMaxLine.
	MaxLine int
	// Logger receives the server's stderr lines at debug level and stray
	// responses at warn. If nil, nothing is logged.
	Logger *slog.Logger
	// Secrets are hidden in everything the server prints that the host
	// shows: stderr lines logged and kept for ExitError, a stdout line
	// quoted in a protocol error. If nil, nothing is hidden.
	Secrets *redact.Secrets
}

// DefaultMaxLine is the cap on a stdout line when Config.MaxLine is zero.
const DefaultMaxLine = 16 << 20

// Start spawns cfg.Command in a process group of its own. It returns once
// the child runs; it never waits for the server to speak.
func Start(cfg Config) (*Process, error) {
	if len(cfg.Command) == 0 {
		return nil, errors.New("no command")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = os.Environ()
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if cmd.Err != nil { // the program was not found
		return nil, startFailure(cmd.Err, cfg)
	}

	var files []*os.File // every end, closed on failure
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (*Process, error) {
		for _, f := range files {
			f.Close()
		}
		return nil, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	errR, errW, err := pipe()
	if err != nil {
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	l, err := newLaunch(cmd)
	if err != nil {
		return fail(startFailure(err, cfg))
	}

	p := &Process{
		server:  cfg.Server,
		log:     logger,
		secrets: cfg.Secrets,
		cmd:     l.cmd,
		stdin:   inW,
		stdout:  outR,
		stderr:  errR,
		toIn:    pipeio.Writer(inW, nil),
		fromOut: pipeio.Reader(outR),
		tail:    newTailBuffer(64<<10, cfg.Secrets),
		grace:   cfg.Grace,
		reaped:  make(chan struct{}),
		exited:  make(chan struct{}),
		drained: make(chan struct{}),
		closed:  make(chan struct{}),
	}
	maxLine := cfg.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	p.out = &stdoutReader{p: p, maxLine: maxLine}
	err = l.spawn(func(err error) {
		p.waitErr = err
		if !p.stopping.Load() {
			p.selfExit.Store(true)
		}
		close(p.reaped)
		// What the child printed last explains its exit: let the drain
		// read it before ExitError answers.
		p.awaitDrain()
		close(p.exited)
	})
	if err != nil {
		l.closeReport()
		return fail(startFailure(err, cfg))
	}
	// The child has its copies; ours of the child's ends must go so that EOF
	// on stdout means every writer is gone.
	inR.Close()
	outW.Close()
	errW.Close()
	go p.drainStderr(logger)
	p.pid, err = l.serverPid()
	p.group = l.group(p.pid)
	if err != nil {
		// The shim could not start the server, and exits: reap it.
		<-p.exited
		p.stdin.Close()
		p.stdout.Close()
		p.stderr.Close()
		return nil, startFailure(err, cfg)
	}
	return p, nil
}

// startFailure explains why a server could not start: the program or the
// working directory that is not there, with the fix (a *StartError), or
// else err as the system said it.
func startFailure(err error, cfg Config) error {
	if why := Startable(cfg.Command, cfg.Dir); why != nil {
		return why
	}
	return err
}

// Pid is the server's pid, which is also its process group's id.
func (p *Process) Pid() int { return p.pid }

// StderrTail is up to n of the last lines the server wrote on stderr
// (of the 64 KiB kept), with its secrets hidden. It may be read while the
// process runs and after it has exited.
func (p *Process) StderrTail(n int) string { return p.tail.Text(n) }

// drainStderr reads stderr until EOF or until Close closes it, keeping the
// last 64 KiB and logging lines at debug, at most stderrLinesPerSecond of
// them. A chatty server never blocks, and never floods the log.
func (p *Process) drainStderr(logger *slog.Logger) {
	defer close(p.drained)
	lines := stderrLogger{logger: logger, server: p.server, secrets: p.secrets}
	defer lines.flush()
	readLines(p.stderr, p.tail, &lines)
}

// longLine is where a line without its end yet is logged: its start, as
// far as the log shows one, and the rest of it is not.
const longLine = 4 << 10

// readLines reads r until it fails, copying what it reads to tail and
// logging each line. Of a line longer than longLine only the start is
// logged, once: logging its rest in pieces would cut a secret value at a
// piece's start, where it is no longer recognised.
func readLines(r io.Reader, tail io.Writer, lines *stderrLogger) {
	buf := make([]byte, 32<<10)
	var partial []byte
	skipping := false // the rest of a long line, logged already
	for {
		n, err := r.Read(buf)
		if n > 0 {
			_, _ = tail.Write(buf[:n])
			partial = append(partial, buf[:n]...)
			for {
				i := bytes.IndexByte(partial, '\n')
				if i < 0 {
					break
				}
				if !skipping {
					lines.log(partial[:i])
				}
				partial, skipping = partial[i+1:], false
			}
			if len(partial) > longLine {
				if !skipping {
					lines.log(partial)
				}
				partial, skipping = partial[:0], true
			}
			partial = append([]byte(nil), partial...)
		}
		if err != nil {
			if len(partial) > 0 && !skipping {
				lines.log(partial)
			}
			return
		}
	}
}

// stderrLinesPerSecond bounds the stderr lines of one server that reach the
// log; the rest are counted and reported once per second.
const stderrLinesPerSecond = 100

// stderrLogger logs one server's stderr lines at debug, rate-limited. It
// belongs to the drain goroutine.
type stderrLogger struct {
	logger     *slog.Logger
	server     string
	secrets    *redact.Secrets
	window     time.Time // start of the current second
	logged     int       // lines logged in it
	suppressed int       // lines dropped in it
}

func (l *stderrLogger) log(line []byte) {
	if !l.logger.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	if now := time.Now(); now.Sub(l.window) >= time.Second {
		l.flush()
		l.window, l.logged = now, 0
	}
	if l.logged >= stderrLinesPerSecond {
		l.suppressed++
		return
	}
	l.logged++
	const maxLine = 512
	s := l.secrets.String(strings.TrimRight(string(line), "\r"))
	if len(s) > maxLine {
		s = s[:maxLine] + "…"
	}
	l.logger.Debug("server stderr", "server", l.server, "line", s)
}

// flush reports the lines suppressed in the current window.
func (l *stderrLogger) flush() {
	if l.suppressed > 0 {
		l.logger.Debug("server stderr lines suppressed", "server", l.server, "lines", l.suppressed,
			"limit_per_second", stderrLinesPerSecond)
		l.suppressed = 0
	}
}

// ExitError explains why the process is gone, for the errors of a
// connection it broke. It returns nil while the child runs, and when the
// host stopped it for no fault of its own (a timeout, a removal, an error
// the caller already has): that exit is no news.
//
//   - The server broke the protocol on stdout (a line that is not JSON, a
//     frame over the cap): that protocol error, whatever the exit status
//     of the process the host then stopped.
//   - The child went away on its own: how it ended, with its last stderr
//     lines: "process exited (exit status 1): <stderr>".
func (p *Process) ExitError() error {
	if err := p.out.brokenProtocol(); err != nil {
		return err
	}
	select {
	case <-p.exited:
	default:
		return nil
	}
	if !p.selfExit.Load() && p.stopping.Load() && !p.crashed() {
		return nil
	}
	status := "exit status 0"
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) {
		status = ee.ProcessState.String()
	} else if p.waitErr != nil {
		status = p.waitErr.Error()
	}
	if tail := p.tail.LastLines(5, 400); tail != "" {
		return fmt.Errorf("process exited (%s): %s", status, tail)
	}
	return fmt.Errorf("process exited (%s)", status)
}

// crashed reports whether the reaped child failed by itself: a non-zero
// exit status, or a signal the host did not send.
func (p *Process) crashed() bool {
	var ee *exec.ExitError
	if !errors.As(p.waitErr, &ee) {
		return p.waitErr != nil
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok {
		return true
	}
	if ws.Signaled() {
		sig := ws.Signal()
		return sig != syscall.SIGTERM && sig != syscall.SIGKILL && sig != syscall.SIGPIPE
	}
	return ws.ExitStatus() != 0
}

// Close stops the process group and reaps the child. It is idempotent and
// safe to call from any goroutine; it returns when the child is reaped and
// stderr drained.
func (p *Process) Close() error {
	p.beginClose()
	<-p.closed
	return nil
}

// beginClose starts the close sequence once, on a goroutine the process
// owns: Close waits for it (closed), so it never outlives the process.
func (p *Process) beginClose() {
	p.stopping.Store(true)
	p.closeOnce.Do(func() { go p.closeSequence() })
}

// closeSequence is stdin close, SIGTERM, SIGKILL to the group, reap.
func (p *Process) closeSequence() {
	defer close(p.closed)
	p.stdin.Close()
	if !p.waitExit(p.grace) {
		p.signalGroup(syscall.SIGTERM)
		if !p.waitExit(p.grace) {
			p.signalGroup(syscall.SIGKILL)
			<-p.reaped
		}
	}
	p.signalGroup(syscall.SIGKILL) // grandchildren left in the group
	p.stdout.Close()
	// Let the drain read stderr to EOF, so the last lines it printed
	// before dying are kept for ExitError; closing our end first would
	// discard what is still in the pipe.
	p.awaitDrain()
	p.stderr.Close()
	<-p.drained
	<-p.exited
}

// stderrGrace bounds the wait for the last of stderr after the child is
// reaped: only a writer outside the process group (a grandchild that left
// it but kept stderr open) can make it run out.
const stderrGrace = 250 * time.Millisecond

// awaitDrain waits until stderr is read to EOF, at most stderrGrace.
func (p *Process) awaitDrain() {
	t := time.NewTimer(stderrGrace)
	defer t.Stop()
	select {
	case <-p.drained:
	case <-t.C:
	}
}

// Exited is closed once the child is reaped and what it printed last on
// stderr is read: from then on ExitError has its final answer.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// waitExit waits up to d for the child to be reaped.
func (p *Process) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.reaped:
		return true
	case <-t.C:
		return false
	}
}

// signalGroup signals the server's process group: every process it
// started that has not left the group.
func (p *Process) signalGroup(sig syscall.Signal) { p.group.signal(sig) }

// stdoutReader is the SDK's view of stdout. Its Close is a no-op: the
// process closes stdout itself, in order, in Close.
//
// It enforces the frame cap on each line (messages are newline-delimited),
// notes an EOF that comes before the host stops the process (the server
// went away on its own), and keeps the last bytes read so that a parse
// error can quote the line that broke it.
type stdoutReader struct {
	p       *Process
	maxLine int // > 0

	mu sync.Mutex
	// mu guards the following. Read runs on the SDK's reader goroutine;
	// explain and brokenProtocol on others.
	lineLen int   // bytes since the last newline
	read    int64 // bytes read in all
	recent  []byte
	broken  error // the first protocol error explained, or the cap
}

// recentBytes is how much of stdout a stdoutReader keeps for quoting.
const recentBytes = 4 << 10

func (r *stdoutReader) Read(b []byte) (int, error) {
	if err := r.brokenProtocol(); err != nil {
		return 0, err // without waiting for more output that may never come
	}
	n, err := r.p.fromOut.Read(b)
	if err == io.EOF && !r.p.stopping.Load() {
		r.p.selfExit.Store(true)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	chunk := b[:n]
	r.read += int64(n)
	r.keep(chunk)
	last := bytes.LastIndexByte(chunk, '\n')
	if last >= 0 {
		r.lineLen = n - last - 1
	} else {
		r.lineLen += n
	}
	if r.lineLen > r.maxLine {
		// The SDK's own cap (set higher, as a backstop) would fire later and
		// without the size. The complete lines before the long one are still
		// delivered: they may answer calls.
		r.broken = protocolError{err: fmt.Errorf("frame exceeded the maximum line length of %d bytes (max_frame_bytes)", r.maxLine)}
		return last + 1, nil
	}
	return n, err
}

func (r *stdoutReader) Close() error { return nil }

// keep appends chunk to the recent bytes, keeping at most recentBytes.
func (r *stdoutReader) keep(chunk []byte) {
	if len(chunk) >= recentBytes {
		r.recent = append(r.recent[:0], chunk[len(chunk)-recentBytes:]...)
		return
	}
	if over := len(r.recent) + len(chunk) - recentBytes; over > 0 {
		r.recent = append(r.recent[:0], r.recent[over:]...)
	}
	r.recent = append(r.recent, chunk...)
}

// explain turns an error of the SDK's reader into a protocol error when
// it is one: for a JSON syntax error, it quotes the start of the line it
// was found in. The first protocol error is remembered: it is why the
// host stops the process (exitError).
func (r *stdoutReader) explain(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var pe protocolError
	if errors.As(err, &pe) {
		return err // the cap, already ours
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err
	}
	pe = protocolError{err: err, line: r.lineAt(se.Offset - 1)}
	if r.broken == nil {
		r.broken = pe
	}
	return pe
}

// brokenProtocol returns the protocol error that broke the stream, if any.
func (r *stdoutReader) brokenProtocol() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.broken
}

// quoteBytes is how much of an offending line an error quotes.
const quoteBytes = 80

// lineAt returns the start of the line holding the byte at stream offset
// off, at most quoteBytes of it, or "" if that byte is no longer kept.
func (r *stdoutReader) lineAt(off int64) string {
	first := r.read - int64(len(r.recent)) // stream offset of recent[0]
	if off < first || off >= r.read {
		return ""
	}
	i := int(off - first)
	start := bytes.LastIndexByte(r.recent[:i], '\n') + 1
	line := r.recent[start:]
	end := bytes.IndexByte(line, '\n')
	if end >= 0 {
		line = line[:end]
	}
	line = bytes.TrimRight(line, "\r")
	cut := end < 0 // the rest of the line is not read yet
	headless := start == 0 && first > 0
	if headless {
		// Its start is gone: so may be the start of a secret in it.
		line = line[min(r.p.secrets.Longest(), len(line)):]
	}
	text := r.p.secrets.String(string(line))
	if len(text) > quoteBytes {
		text, cut = text[:quoteBytes], true
	}
	q := strconv.Quote(text)
	if headless {
		q = "…" + q
	}
	if cut {
		q += "…"
	}
	return q
}

// protocolError is a server breaking the protocol on its stdout: output
// that is not JSON-RPC, or a frame over the cap. line quotes the start of
// the offending line when known.
type protocolError struct {
	err  error
	line string
}

func (e protocolError) Error() string {
	if e.line != "" {
		return fmt.Sprintf("protocol error: %v in stdout line %s", e.err, e.line)
	}
	return "protocol error: " + e.err.Error()
}

func (e protocolError) Unwrap() error { return e.err }

// stdinWriter is the SDK's view of stdin; closing it starts the process's
// close sequence without waiting for it: the SDK closes the connection of
// a failed handshake before Connect returns, and a connect timeout is
// reported when it fires, not grace periods later. The transport's Close
// (conn.close) waits for the sequence to finish.
type stdinWriter struct{ p *Process }

func (w stdinWriter) Write(b []byte) (int, error) { return w.p.toIn.Write(b) }
func (w stdinWriter) Close() error {
	w.p.beginClose()
	return nil
}

var _ io.ReadCloser = (*stdoutReader)(nil)

// NoticesRead counts the log and progress notifications
// (notifications/message, notifications/progress) read from the server so
// far, in the order of its output: a caller holding a response can wait
// until its session has handled as many, and with them every notification
// the server sent before the response.
func (p *Process) NoticesRead() uint64 { return p.noticesRead.Load() }
