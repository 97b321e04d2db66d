package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"github.com/mcpvisor/mcpvisor/internal/control"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/textsafe"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
	"golang.org/x/term"
)

// defaultStartup is used when there is no ./startup.lua and no -c: it is
// the repository's startup.lua (a test keeps the two identical).
//
//go:embed default_startup.lua
var defaultStartup string

// shutdownGrace bounds the servers' part of a graceful shutdown; a
// second signal forces exit.
const shutdownGrace = 10 * time.Second

// defaultShutdownGrace is --shutdown-grace: how long the gateway's calls
// in flight may finish before the servers stop.
const defaultShutdownGrace = 10 * time.Second

// host is one running mcpvisor: the bus, the manager, the Lua runtime and
// the log subscriber.
type host struct {
	chunk   chunkCancel // the REPL's running chunk
	bus     *events.Bus
	mgr     *manager.Manager
	rt      *luaapi.Runtime
	logOut  *swapWriter // where logs go: stderr, or through readline at the REPL
	out     *swapWriter // where print goes: stdout, or through readline
	log     *slog.Logger
	logDone chan struct{}
	otel    *hostTelemetry // exporters per OTEL_*; flushed at shutdown
	hud     *hudDisplay    // the live status block, when stdout is a terminal
	logPath string         // the log file, at the REPL
	gateway gatewayHost    // serves the servers to MCP clients, when asked
	// configPath is the config file the web console's reload button
	// reloads; "" when there is none. Set before the config first runs.
	configPath string
	// stopWatch stops the config watcher and waits for it; nil if the
	// config is not watched.
	stopWatch func()
	// prompter asks the person at the REPL what servers ask, when the
	// host runs one; nil otherwise.
	prompter *terminalPrompter
	// control is the socket `mcpvisor status` finds this host by, while it
	// runs for long (not for -e or a script); nil otherwise.
	control *control.Server
	started time.Time
}

func runHost(cfg config, stdin io.Reader, stdout, stderr io.Writer) int {
	interactive := !cfg.hasCode && cfg.script == "" && isTerminal(stdin)
	if !interactive && !cfg.levelSet {
		cfg.logLevel = quietLevel
	}
	stdout, stderr, hud := terminalHUD(cfg, interactive, stdout, stderr)
	logOut := &swapWriter{w: stderr}
	logger := newLogger(cfg, logOut)
	var hudShown atomic.Pointer[hudDisplay]
	var quiet *quietHandler
	var logPath string
	if interactive {
		if f, err := openLogFile(); err != nil {
			fmt.Fprintf(stderr, "mcpvisor: %v; logging to the terminal\n", err)
		} else {
			defer f.Close()
			logPath = f.Name()
			quiet = newQuietHandler(newHandler(cfg, max(slog.LevelWarn, cfg.level()), logOut), &hudShown)
			logger = slog.New(slog.NewMultiHandler(newHandler(cfg, cfg.level(), f), quiet))
		}
	}
	path, src, err := startupSource(cfg.file)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
		return 1
	}
	tel, err := newTelemetry(context.Background(), logOut, logger)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
		return 1
	}
	outSwap := &swapWriter{w: stdout}
	var prompter *terminalPrompter
	if interactive {
		prompter = newTerminalPrompter()
	}
	h := startHost(cfg, logger, logOut, outSwap, filepath.Dir(path), tel, hud, prompter)
	h.logPath = logPath
	if err := h.gateway.opts.check(); err != nil {
		h.hud.Stop()
		fmt.Fprintf(stderr, "mcpvisor: --mode: %v\n", err)
		_ = h.shutdown()
		return 2
	}
	hudShown.Store(h.hud)
	// Signals are handled until the very end, so one during the graceful
	// shutdown still forces exit rather than killing us half-way.
	ctx, stopSignals := h.handleSignals(interactive, stderr)
	defer stopSignals()
	code := h.drive(ctx, cfg, interactive, path, src, stdin, stdout, stderr)
	h.hud.Stop() // the terminal is whole again before the shutdown's logs
	err = h.shutdown()
	if quiet != nil {
		quiet.flush() // the repeats not said yet
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
		return 1
	}
	return code
}

// handleSignals turns SIGINT/SIGTERM into cancellation of the returned
// context (a graceful shutdown); a second signal forces exit. At the REPL,
// Ctrl-C only interrupts the running chunk.
func (h *host) handleSignals(interactive bool, stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				if interactive && sig == os.Interrupt && h.interruptChunk() {
					continue
				}
				if n++; n >= 2 {
					h.hud.resetRegion()
					fmt.Fprintln(stderr, "mcpvisor: forced exit")
					os.Exit(130)
				}
				fmt.Fprintln(stderr, "mcpvisor: shutting down (signal again to force)")
				cancel()
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// startHost starts the bus, the manager and the Lua runtime. prompter, if
// not nil, asks the person at the REPL what servers ask.
func startHost(cfg config, logger *slog.Logger, logOut, stdout *swapWriter, dir string, tel *hostTelemetry, hud *hudOptions, prompter *terminalPrompter) *host {
	h := &host{started: time.Now(), bus: events.NewBus(events.Options{}), logOut: logOut, out: stdout, log: logger, logDone: make(chan struct{}), otel: tel, prompter: prompter}
	sub := h.bus.Subscribe(events.SubscribeOptions{Passive: logPassive(logger)})
	go func() {
		defer close(h.logDone)
		logEvents(sub, logger, configHint(cfg.file))
	}()
	h.mgr = manager.New(manager.Options{Bus: h.bus, Logger: logger, Version: version(),
		MaxConnections: cfg.maxConnections, MaxConnecting: cfg.maxConnecting,
		TracerProvider: tel.tracerProvider(), MeterProvider: tel.meterProvider()})
	var hudAPI luaapi.HUD // nil without a terminal: mcp_hud says so
	if hud != nil {
		hud.Bus = h.bus
		hud.Costs = toolCosts(h.mgr)
		hud.Metrics = h.mgr.Metrics
		hud.Endpoints = gatewayEndpoints(&h.gateway)
		h.hud = startHUD(*hud)
		hudAPI = h.hud
	}
	h.gateway.h = h
	h.gateway.opts = gatewayOptions{maxSessions: cfg.maxSessions, maxClientCalls: cfg.maxClientCalls,
		sessionIdle: cfg.sessionIdle, grace: cfg.shutdownGrace, fastPath: cfg.fastPath,
		wait: cfg.wait, nameBudget: cfg.nameBudget, statusTool: !cfg.noStatusTool, mode: cfg.mode, metaPrefix: cfg.metaPrefix, code: runLua(cfg.codeLimits)}
	opts := luaapi.Options{Manager: h.mgr, Stdout: stdout, ScriptDir: filepath.Join(dir, "scripts"), Logger: logger, HUD: hudAPI,
		ConfigBudget: cfg.configBudget,
		Gateway:      gatewayAPI{&h.gateway}}
	if prompter != nil { // a nil *terminalPrompter is not a nil Prompter
		opts.Prompter = prompter
	}
	rt, err := luaapi.New(opts)
	if err != nil {
		panic(err) // only for a missing manager
	}
	h.rt = rt
	if !cfg.hasCode && cfg.script == "" && !cfg.noControl {
		h.listenControl(cfg.file)
	}
	return h
}

// drive runs the config and then -e, the REPL or a script (run FILE, or
// stdin). Code that is not interactive starts once the servers have
// settled. It returns the exit code.
func (h *host) drive(ctx context.Context, cfg config, interactive bool, path, src string, stdin io.Reader, stdout, stderr io.Writer) int {
	if cfg.http != "" {
		h.gateway.get() // before the servers connect: see serve
	}
	if fileExists(path) {
		h.configPath = path
	}
	if !h.startConfig(ctx, path, src, stderr) {
		return 1
	}
	if !cfg.hasCode && !cfg.noWatch && fileExists(path) {
		h.watch(ctx, path, src)
	}
	if cfg.http != "" {
		token, err := serveToken(cfg.tokenFile)
		if err == nil {
			err = h.gateway.serveHTTP(cfg.http, token)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcpvisor: %v\n", err)
			return 2
		}
	}
	if !interactive {
		h.settle(ctx, cfg.wait)
	}
	switch {
	case cfg.hasCode:
		res, err := h.rt.Exec(ctx, cfg.code, "(-e)")
		if err != nil {
			printError(stderr, err)
			return 1
		}
		printResult(stdout, res)
		return 0
	case interactive:
		return runREPL(ctx, h, stdin, stdout, stderr)
	default:
		return h.runScript(ctx, cfg, stdin, stderr)
	}
}

// startConfig applies the config at start and reports whether the host
// goes on. A config stopped at its time budget has had what it declared
// before applied: the error is shown, and the host comes up with those
// servers rather than not at all.
func (h *host) startConfig(ctx context.Context, path, src string, stderr io.Writer) bool {
	_, err := h.rt.LoadConfigSource(ctx, path, src)
	if err == nil {
		return true
	}
	printError(stderr, err)
	// Only when the budget is all that went wrong: a listener that could
	// not start as well (joined to it) stops the host as it would alone.
	var joined interface{ Unwrap() []error }
	return errors.Is(err, luaapi.ErrConfigBudget) && !errors.As(err, &joined)
}

// watch reloads the config on every saved change until ctx ends or the
// host shuts down, which stops the watcher and waits for it (a reload in
// progress included) before it closes the runtime. A broken edit changes
// nothing: LoadConfigSource reports it (config_error event, logged with
// file:line) and the running servers stay.
func (h *host) watch(ctx context.Context, path, src string) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := newConfigWatcher(path, src, h.log, func(src string) {
		if _, err := h.rt.LoadConfigSource(ctx, path, src); err == nil {
			h.log.Info("config reloaded", "file", path)
		}
	})
	if err != nil {
		cancel()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.run(ctx, nil); err != nil {
			h.log.Warn("not watching the config", "file", path, "error", err)
		}
	}()
	h.stopWatch = func() {
		cancel()
		<-done
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (h *host) shutdown() error {
	if h.control != nil {
		_ = h.control.Close()
	}
	// The watcher next: no reload may start on a runtime being closed.
	if h.stopWatch != nil {
		h.stopWatch()
	}
	// Lua next: once it is closed, nothing asks for a listener or sets
	// toolsets, so the gateway closed next stays closed.
	h.rt.Close()
	h.gateway.close()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err := h.mgr.Close(ctx)
	h.bus.Close()
	<-h.logDone
	// Last, so the spans of the shutdown itself are exported too.
	flush, cancelFlush := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancelFlush()
	if ferr := h.otel.shutdown(flush); ferr != nil {
		h.log.Warn("telemetry not fully exported", "error", ferr)
	}
	return err
}

// configHint is the config file that the commands the host suggests must
// name: "" for the default (what startupSource finds without -c).
func configHint(file string) string {
	if file == "" || filepath.Clean(file) == "startup.lua" {
		return ""
	}
	return file
}

// startupSource reads the config: -c FILE, else ./startup.lua, else the
// user's config (userConfigPath), else the built-in default.
func startupSource(file string) (path, src string, err error) {
	if file == "" {
		if b, err := os.ReadFile("startup.lua"); err == nil {
			return "startup.lua", string(b), nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", "", fmt.Errorf("read startup.lua: %w", err)
		}
		if user, err := userConfigPath(); err == nil {
			if b, err := os.ReadFile(user); err == nil {
				return user, string(b), nil
			} else if !errors.Is(err, os.ErrNotExist) {
				return "", "", fmt.Errorf("read config: %w", err)
			}
		}
		return "startup.lua", defaultStartup, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("read config: %w", err)
	}
	return file, string(b), nil
}

// printResult prints a chunk's values, tab-separated on one line. Strings
// among them are already made safe for the terminal (luaapi.Result).
func printResult(w io.Writer, res luaapi.Result) {
	if len(res.Values) > 0 {
		fmt.Fprintln(w, strings.Join(res.Values, "\t"))
	}
}

// printError prints a failed chunk's error, with its Lua traceback when
// there is one. Error text often quotes a server (its message, its stderr),
// so what a terminal would act on or hide is shown escaped.
func printError(w io.Writer, err error) {
	var le *luaapi.Error
	if errors.As(err, &le) && le.ShownTraceback() != "" && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(w, "error: %s\n%s\n", textsafe.Block(le.Message), textsafe.Block(le.ShownTraceback()))
		return
	}
	fmt.Fprintf(w, "error: %s\n", textsafe.Block(err.Error()))
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	return slog.New(newHandler(cfg, cfg.level(), w))
}

// newHandler writes records at level and above to w, in --log-format.
func newHandler(cfg config, level slog.Level, w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	if cfg.logFormat == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// level is --log-level as a slog level.
func (c config) level() slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.logLevel))
	return level
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// swapWriter lets the REPL route log lines through readline so they never
// garble the line being typed.
type swapWriter struct {
	mu sync.Mutex
	// mu guards w.
	w io.Writer
}

func (s *swapWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *swapWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

// chunkCancel holds the cancel function of the chunk the REPL is running.
type chunkCancel struct {
	mu sync.Mutex
	// mu guards cancel.
	cancel context.CancelFunc
}

func (c *chunkCancel) set(f context.CancelFunc) {
	c.mu.Lock()
	c.cancel = f
	c.mu.Unlock()
}

// interruptChunk cancels the running REPL chunk, reporting whether there was one.
func (h *host) interruptChunk() bool {
	h.chunk.mu.Lock()
	defer h.chunk.mu.Unlock()
	if h.chunk.cancel == nil {
		return false
	}
	h.chunk.cancel()
	return true
}

func version() string { return "0.1.0" }
