//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A spawn storm: 800 servers that never answer initialize (sleep 300) are
// started a few at a time, not all at once. Three seconds in, the host
// runs at most 64 server processes (the default cap is 4 per core, 8 to
// 64), and Lua still runs at once (--wait 0: the servers could not settle
// within the default bound anyway).
func TestSpawnStormIsCapped(t *testing.T) {
	const n = 800
	dir := t.TempDir()
	var cfg strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&cfg, "mcp_add(\"s%d\", {command = {\"sleep\", \"300\"}})\n", i)
	}
	file := filepath.Join(dir, "storm.lua")
	require.NoError(t, os.WriteFile(file, []byte(cfg.String()), 0o644))

	began := time.Now()
	p := start(t, invocation{args: []string{"-c", file, "--no-watch", "--no-hud", "--wait", "0"}})
	// The last server's supervisor says it waits once it has run: look
	// until it has (it is among 800 goroutines just started), for up to
	// 20s.
	_, err := p.stdin.Write([]byte(`local w for _ = 1, 2000 do w = mcp_status("s800").waiting if w then break end sleep(0.01) end
		print(#mcp_servers(), w) sleep(3.5)` + "\n"))
	require.NoError(t, err)
	require.NoError(t, p.stdin.Close())
	require.Regexp(t, fmt.Sprintf(`^%d\tmax connecting \(\d+\) reached$`, n), p.line(30*time.Second))
	t.Logf("the script answered %v after start", time.Since(began).Round(time.Millisecond))

	time.Sleep(time.Until(began.Add(3 * time.Second)))
	kids := 0
	for _, state := range childrenOf(p.cmd.Process.Pid) {
		if state != 'Z' {
			kids++
		}
	}
	t.Logf("%d server processes 3 s after start", kids)
	require.LessOrEqual(t, kids, 64, "server processes at once")
	require.Positive(t, kids, "the first servers were started")

	require.True(t, p.wait(30*time.Second), "mcpvisor did not exit after the script")
}

// A negative --max-connecting is refused, as a negative --max-connections.
func TestMaxConnectingFlagRefusesNegative(t *testing.T) {
	o := runBinary(t, invocation{args: []string{"--max-connecting", "-1", "-e", "return 1"}})
	require.Equal(t, 2, o.code)
	require.Contains(t, o.stderr, "--max-connecting must be 0 (no cap) or more, got -1")
}
