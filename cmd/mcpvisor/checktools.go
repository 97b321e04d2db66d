package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/textsafe"
	"github.com/mcpvisor/mcpvisor/manager"
)

// checkTools is `mcpvisor check --tools`, once the config has checked: it
// starts the config's servers as serve does (the same host, its gateway
// made before they connect), gives them up to timeout to settle, prints
// what their tools cost a model in tokens, stops them all and exits 0. A
// server that fails is a line of the table, not a failure of the check;
// only a config that does not run is (exit 1).
func checkTools(cfg config, timeout time.Duration, path, src string, stdout, stderr io.Writer) int {
	// The servers' failures are in the table; the log would repeat them.
	logOut := &swapWriter{w: io.Discard}
	logger := slog.New(slog.DiscardHandler)
	// A passing run that `mcpvisor status` must not find, and whose print
	// was shown by the check already.
	cfg.noControl = true
	h := startHost(cfg, logger, logOut, &swapWriter{w: io.Discard}, filepath.Dir(path), &hostTelemetry{}, nil, nil)
	// The config's mcp_serve is not acted on: the address may be a running
	// mcpvisor's.
	h.gateway.opts.noListen = true
	ctx, stopSignals := h.handleSignals(false, stderr)
	defer stopSignals()
	code := h.checkTools(ctx, timeout, path, src, stdout, stderr)
	if err := h.shutdown(); err != nil {
		fmt.Fprintf(stderr, "mcpvisor check: %v\n", err)
	}
	return code
}

func (h *host) checkTools(ctx context.Context, timeout time.Duration, path, src string, stdout, stderr io.Writer) int {
	gw := h.gateway.get() // before the servers connect, as serve makes it
	if !h.startConfig(ctx, path, src, stderr) {
		return 1
	}
	start := time.Now()
	h.settle(ctx, timeout)
	if ctx.Err() != nil {
		return 1 // interrupted: nothing worth printing was measured
	}
	waited := time.Since(start).Round(100 * time.Millisecond)
	costs := gw.ModeCosts()
	count := toolCosts(h.mgr)

	fmt.Fprintf(stdout, "\nTools, in tokens (o200k_base, an estimate), after starting the servers (%v):\n", waited)
	servers := table{head: []string{"SERVER", "STATE", "TOOLS", "TOKENS"}, right: []bool{false, false, true, true}}
	var notes []string
	for _, st := range h.mgr.Statuses() {
		tools, tokens := "-", "-"
		if st.State == manager.StateConnected || st.Tools > 0 {
			tools, tokens = strconv.Itoa(st.Tools), thousands(count(st.Name))
		}
		servers.add(textsafe.Line(st.Name), st.State.String(), tools, tokens)
		if st.LastError != "" && st.State != manager.StateConnected {
			notes = append(notes, fmt.Sprintf("%s: %s", textsafe.Line(st.Name), textsafe.Line(st.LastError)))
		} else if !st.Settled() {
			notes = append(notes, fmt.Sprintf("%s: still %s after %v (--timeout)", textsafe.Line(st.Name), st.State, timeout))
		}
	}
	servers.write(stdout)
	for _, n := range notes {
		fmt.Fprintln(stdout, n)
	}

	fmt.Fprintln(stdout, "\nWhat a client's tools/list costs, by endpoint and mode:")
	endpoints := table{head: []string{"ENDPOINT", "MODE", "TOOLS", "DIRECT", "SEARCH", "CODE"},
		right: []bool{false, false, true, true, true, true}}
	for _, c := range costs {
		if strings.HasPrefix(c.Endpoint, "/servers/") {
			continue // each server's own: its row above says what it costs
		}
		endpoints.add(textsafe.Line(c.Endpoint), string(c.Mode), strconv.Itoa(c.Tools),
			thousands(c.Of(gateway.ModeDirect)), thousands(c.Of(gateway.ModeSearch)), thousands(c.Of(gateway.ModeCode)))
	}
	endpoints.write(stdout)
	fmt.Fprintln(stdout, "(MODE is what a client there gets unless mcp_client_mode chooses another)")
	return 0
}

// table lays out rows in aligned columns, two spaces apart: text to the
// left, figures (right[i]) to the right.
type table struct {
	head  []string
	right []bool
	rows  [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	widths := make([]int, len(t.head))
	for _, r := range append([][]string{t.head}, t.rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range append([][]string{t.head}, t.rows...) {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// thousands writes n with a comma between each group of three digits:
// 34,473.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
