package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpvisor/mcpvisor/internal/control"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/gateway"
	webui "github.com/mcpvisor/mcpvisor/gateway/console"
)

// runServe is `mcpvisor serve`: the servers of the config served to MCP
// clients, on stdin/stdout (the command of a Claude Desktop, Cursor or VS
// Code entry) or, with --http, on streamable HTTP and SSE. stdout carries
// MCP and nothing else: logs and print go to stderr.
func runServe(cfg config, stdin io.Reader, stdout, stderr io.Writer) int {
	logOut := &swapWriter{w: stderr}
	logger := newLogger(cfg, logOut)
	path, src, err := startupSource(cfg.file)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor serve: %v\n", err)
		return 1
	}
	token, err := serveToken(cfg.tokenFile)
	if err == nil && cfg.http != "" {
		err = checkServeAddr(cfg.http, token) // before any server starts
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor serve: %v\n", err)
		return 2
	}
	tel, err := newTelemetry(context.Background(), logOut, logger)
	if err != nil {
		fmt.Fprintf(stderr, "mcpvisor serve: %v\n", err)
		return 1
	}
	h := startHost(cfg, logger, logOut, &swapWriter{w: stderr}, filepath.Dir(path), tel, nil, nil)
	if err := h.gateway.opts.check(); err != nil {
		fmt.Fprintf(stderr, "mcpvisor serve: --mode: %v\n", err)
		_ = h.shutdown()
		return 2
	}
	ctx, stopSignals := h.handleSignals(false, stderr)
	defer stopSignals()
	code := h.serve(ctx, cfg, token, path, src, stdin, stdout, stderr)
	if err := h.shutdown(); err != nil {
		fmt.Fprintf(stderr, "mcpvisor serve: %v\n", err)
		return 1
	}
	return code
}

func (h *host) serve(ctx context.Context, cfg config, token, path, src string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Made before the config's servers connect, so they are told what the
	// gateway's clients can answer (elicitation, sampling, roots).
	h.gateway.get()
	if fileExists(path) {
		h.configPath = path
	}
	if !h.startConfig(ctx, path, src, stderr) {
		return 1
	}
	if !cfg.noWatch && fileExists(path) {
		h.watch(ctx, path, src)
	}
	gw := h.gateway.get()
	if cfg.server != "" {
		if _, err := h.mgr.Status(cfg.server); err != nil {
			fmt.Fprintf(stderr, "mcpvisor serve: --server %s: no such server in %s; declared: %s\n", cfg.server, path, strings.Join(h.mgr.Names(), ", "))
			return 2
		}
	}
	if cfg.toolset != "" && !slices.Contains(gw.Toolsets(), cfg.toolset) {
		fmt.Fprintf(stderr, "mcpvisor serve: --toolset %s: no such toolset in %s (declare it with mcp_toolset); declared: %s\n",
			cfg.toolset, path, strings.Join(gw.Toolsets(), ", "))
		return 2
	}
	if cfg.http != "" {
		if err := h.gateway.serveHTTP(cfg.http, token); err != nil {
			fmt.Fprintf(stderr, "mcpvisor serve: %v\n", err)
			return 2
		}
		<-ctx.Done()
		return 0
	}
	// The session ends with stdin, or after a signal once the gateway has
	// given the client's calls in flight their grace.
	stdio, stopStdio := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStdio()
	served := make(chan error, 1)
	in, out := pipes(stdin, stdout)
	go func() {
		served <- gw.ServeStdio(stdio, io.NopCloser(in), nopWriteCloser{out}, cfg.server, cfg.toolset)
	}()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		h.gateway.drain()
		stopStdio()
		<-served // ended by the drain, as asked
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "mcpvisor serve: %v\n", err)
		return 1
	}
	return 0
}

// serveToken is the bearer token HTTP clients must send: the contents of
// --token-file, else $MCPVISOR_TOKEN, else none.
func serveToken(file string) (string, error) { return readToken(file, "--token-file") }

// readToken is the token in file, else $MCPVISOR_TOKEN, else none; what
// names the setting file came from, for errors.
func readToken(file, what string) (string, error) {
	if file == "" {
		return os.Getenv("MCPVISOR_TOKEN"), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s %s is empty; put the token in it (for example: openssl rand -hex 32 > %s)", what, file, file)
	}
	return tok, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// gatewayHost owns the host's gateway, made on first use (serve, --http or
// mcp_serve), and its HTTP listener.
type gatewayHost struct {
	h    *host
	opts gatewayOptions // set before first use
	// changing is held for the whole of a listener change, so that two
	// (mcp_serve from a reload, --http at startup) never both listen.
	changing sync.Mutex

	mu sync.Mutex
	// mu guards gw, http, ui, addr and token; nothing is called under it.
	gw    *gateway.Gateway
	http  *gateway.HTTPServer
	ui    *webui.Console // the web console served with http
	addr  string
	token string
}

func (g *gatewayHost) get() *gateway.Gateway {
	if gw := g.peek(); gw != nil {
		return gw
	}
	// Made outside the lock; of two made at once, the first stored wins.
	made := gateway.New(gateway.Options{Source: g.h.mgr, Logger: g.h.log, Version: version(),
		MaxSessions: g.opts.maxSessions, MaxClientCalls: g.opts.clientCalls(),
		Wait: g.opts.wait, NameBudget: g.opts.nameBudget, StatusTool: g.opts.statusTool,
		Mode: g.opts.mode, Code: g.opts.code, MetaPrefix: g.opts.metaPrefix, FastPath: g.opts.fastPath})
	g.mu.Lock()
	if g.gw == nil {
		g.gw, made = made, nil
	}
	gw := g.gw
	g.mu.Unlock()
	if made != nil {
		made.Close()
	}
	return gw
}

// peek is the gateway if it was made, else nil.
func (g *gatewayHost) peek() *gateway.Gateway {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.gw
}

// serveHTTP listens on addr ("" stops listening), replacing a listener on
// another address or with another token; the same address and token again
// change nothing.
func (g *gatewayHost) serveHTTP(addr, token string) error {
	if g.opts.noListen {
		return nil
	}
	g.changing.Lock()
	defer g.changing.Unlock()
	if addr == "" && g.peek() == nil {
		return nil // nothing listens, and no gateway is needed for that
	}
	gw := g.get()
	g.mu.Lock()
	if addr == g.addr && token == g.token {
		g.mu.Unlock()
		return nil
	}
	old, oldUI := g.http, g.ui
	g.http, g.ui, g.addr, g.token = nil, nil, "", ""
	g.mu.Unlock()
	if oldUI != nil {
		oldUI.Close()
	}
	if old != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		_ = old.Close(ctx)
		cancel()
	}
	if addr == "" {
		g.h.hud.endpointsChanged() // no longer served
		return nil
	}
	ui := g.h.webConsole(gw, token)
	srv, err := gw.Listen(gateway.HTTPOptions{Addr: addr, Token: token, SessionTimeout: g.opts.sessionIdle,
		Ready: g.h.settled, Control: control.Handler(controlBackend{h: g.h}), Console: ui})
	if err != nil {
		ui.Close()
		return err
	}
	g.mu.Lock()
	g.http, g.ui, g.addr, g.token = srv, ui, addr, token
	g.mu.Unlock()
	g.h.hud.endpointsChanged() // they are served now
	g.h.log.Info("serving MCP over HTTP", "url", "http://"+srv.Addr()+"/mcp", "sse", "http://"+srv.Addr()+"/sse",
		"console", "http://"+srv.Addr()+"/ui", "token", token != "")
	return nil
}

// settled reports whether every server has had its first say (connected,
// failed, backing off, disabled, waiting for a login): /readyz.
func (h *host) settled() bool {
	for _, st := range h.mgr.Statuses() {
		if !st.Settled() {
			return false
		}
	}
	return true
}

// address is where the gateway listens on HTTP, or "".
func (g *gatewayHost) address() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.http == nil {
		return ""
	}
	return g.http.Addr()
}

// drain gives the gateway's calls in flight the shutdown grace, answers
// those still running then with an error, and ends every client
// session; new ones are refused from then on.
func (g *gatewayHost) drain() {
	gw := g.peek()
	if gw == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.grace)
	defer cancel()
	if err := gw.Shutdown(ctx); err != nil {
		g.h.log.Warn("the shutdown grace ran out: calls still in flight were cancelled and answered with an error", "grace", g.opts.grace)
	}
}

// close stops the listener from accepting, drains the gateway's clients,
// and stops the gateway.
func (g *gatewayHost) close() {
	g.changing.Lock()
	defer g.changing.Unlock()
	g.mu.Lock()
	srv, ui := g.http, g.ui
	g.http, g.ui, g.addr, g.token = nil, nil, "", ""
	g.mu.Unlock()
	if ui != nil {
		ui.Close() // its live streams would hold the listener's close up
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		if srv != nil {
			// Stops accepting at once; the requests left end as drain
			// ends their sessions.
			ctx, cancel := context.WithTimeout(context.Background(), g.opts.grace+httpCloseGrace)
			defer cancel()
			_ = srv.Close(ctx)
		}
	}()
	g.drain()
	g.mu.Lock()
	gw := g.gw
	g.gw = nil
	g.mu.Unlock()
	if gw != nil {
		gw.Close()
	}
	<-closed
}

// httpCloseGrace is how long, after the gateway's shutdown grace, HTTP
// requests still open (a body still arriving) have before they are cut.
const httpCloseGrace = 2 * time.Second

// gatewayOptions are the gateway's flags: the bounds on its clients, how
// long their first lists wait for the servers, the names' budget and the
// status tool.
type gatewayOptions struct {
	maxSessions, maxClientCalls int
	sessionIdle, grace          time.Duration
	fastPath                    string
	wait                        time.Duration
	nameBudget                  int
	statusTool                  bool
	// mode is the clients' default mode; code, if set, runs the chunks of
	// clients in code mode (without it, code mode is refused).
	mode       gateway.Mode
	metaPrefix string
	// noListen makes serveHTTP (--http, mcp_serve) do nothing: check
	// --tools measures the endpoints, it serves no one.
	noListen bool
	code     func(ctx context.Context, code string, env gateway.CodeEnv) (*mcp.CallToolResult, error)
}

// check reports a gateway setting that cannot be served (code mode with
// nothing to run Lua chunks), before anything starts.
func (o gatewayOptions) check() error {
	return gateway.Options{Mode: o.mode, Code: o.code}.Check()
}

// clientCalls is maxClientCalls as gateway.Options takes it: 0 there is
// the default, and no cap is less than 0.
func (o gatewayOptions) clientCalls() int {
	if o.maxClientCalls == 0 {
		return -1
	}
	return o.maxClientCalls
}
