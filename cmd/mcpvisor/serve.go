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

	"github.com/mcpvisor/mcpvisor/gateway"
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
		err = gateway.CheckAddr(cfg.http, token) // before any server starts
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
	if _, err := h.rt.LoadConfigSource(ctx, path, src); err != nil {
		printError(stderr, err)
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
	err := gw.ServeStdio(ctx, io.NopCloser(stdin), nopWriteCloser{stdout}, cfg.server, cfg.toolset)
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
	h *host
	// changing is held for the whole of a listener change, so that two
	// (mcp_serve from a reload, --http at startup) never both listen.
	changing sync.Mutex

	// opts are the gateway's options from the command line (its Source,
	// Logger and Version are set when it is made); set before first use.
	opts gateway.Options

	mu sync.Mutex
	// mu guards gw, http, addr and token; nothing is called under it.
	gw    *gateway.Gateway
	http  *gateway.HTTPServer
	addr  string
	token string
}

func (g *gatewayHost) get() *gateway.Gateway {
	if gw := g.peek(); gw != nil {
		return gw
	}
	// Made outside the lock; of two made at once, the first stored wins.
	opts := g.opts
	opts.Source, opts.Logger, opts.Version = g.h.mgr, g.h.log, version()
	made := gateway.New(opts)
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
	old := g.http
	g.http, g.addr, g.token = nil, "", ""
	g.mu.Unlock()
	if old != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		_ = old.Close(ctx)
		cancel()
	}
	if addr == "" {
		return nil
	}
	srv, err := gw.Listen(gateway.HTTPOptions{Addr: addr, Token: token, Ready: g.h.settled,
		Control: control.Handler(controlBackend{h: g.h})})
	if err != nil {
		return err
	}
	g.mu.Lock()
	g.http, g.addr, g.token = srv, addr, token
	g.mu.Unlock()
	g.h.log.Info("serving MCP over HTTP", "url", "http://"+srv.Addr()+"/mcp", "sse", "http://"+srv.Addr()+"/sse", "token", token != "")
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

// close stops the listener and the gateway.
func (g *gatewayHost) close() {
	_ = g.serveHTTP("", "")
	g.mu.Lock()
	gw := g.gw
	g.gw = nil
	g.mu.Unlock()
	if gw != nil {
		gw.Close()
	}
}
