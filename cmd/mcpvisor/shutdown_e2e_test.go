//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
)

// SIGTERM to `mcpvisor serve` with calls in flight: a call that finishes
// within --shutdown-grace gets its result, one that does not is cancelled
// upstream and answered with an error saying why (over HTTP and stdio
// alike, never cut off without an answer), and mcpvisor exits 0 within
// the grace plus the servers' stop time.
func TestSIGTERMWithCallsInFlight(t *testing.T) {
	const grace = 3 * time.Second
	for _, transport := range []string{"http", "stdio"} {
		t.Run(transport, func(t *testing.T) {
			noLeftovers(t)
			dir := t.TempDir()
			path, record := filepath.Join(dir, "startup.lua"), filepath.Join(dir, "record")
			writeConfig(t, path, `mcp_add("f", {command = {"`+fakemcptest.Build(t)+`", "--hang-tool=hang", "--record=`+record+`"}})`+"\n")
			args := []string{"serve", "-c", path, "--no-watch", "--shutdown-grace", grace.String(), "--log-level", "info"}
			ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
			defer cancel()

			var cs *mcp.ClientSession
			var signal func()
			var exited func(time.Duration) (code int, ok bool)
			if transport == "http" {
				p := start(t, invocation{dir: dir, args: append(args, "--http", "127.0.0.1:0")})
				log := p.stderr.waitFor(t, "the serving log line", 20*time.Second, servingURL.MatchString)
				// Retries as editors' clients do: the end of the session's
				// stream then does not fail the calls whose answers are
				// on their way.
				cs = serveClient(t, ctx, &mcp.StreamableClientTransport{Endpoint: servingURL.FindStringSubmatch(log)[1] + "/mcp"}, make(chan struct{}, 1))
				defer cs.Close()
				signal = func() { require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM)) }
				exited = func(d time.Duration) (int, bool) {
					if !p.wait(d) {
						return -1, false
					}
					return p.cmd.ProcessState.ExitCode(), true
				}
			} else {
				cmd := command(ctx, t, invocation{dir: dir, args: args})
				var stderr syncBuffer
				cmd.Stderr = &stderr
				defer func() { t.Logf("mcpvisor serve stderr:\n%s", stderr.String()) }()
				cs = serveClient(t, ctx, &mcp.CommandTransport{Command: cmd}, make(chan struct{}, 1))
				ownPIDs.Store(cmd.Process.Pid, struct{}{})
				signal = func() { require.NoError(t, cmd.Process.Signal(syscall.SIGTERM)) }
				exited = func(d time.Duration) (int, bool) { return waitExit(t, cmd, d) }
			}
			listedTools(t, ctx, cs, 20*time.Second, "the server's tools", func(n []string) bool { return slices.Contains(n, "f__hang") })

			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			slow, hung := make(chan answer, 1), make(chan answer, 1)
			go func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "f__slow", Arguments: map[string]any{"ms": 1000}})
				slow <- answer{res, err}
			}()
			go func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "f__hang", Arguments: map[string]any{}})
				hung <- answer{res, err}
			}()
			require.Eventually(t, func() bool {
				b, _ := os.ReadFile(record)
				return strings.Count(string(b), "tools/call") == 2
			}, 20*time.Second, 10*time.Millisecond, "the server has both calls")

			sent := time.Now()
			signal()
			a := <-slow
			require.NoError(t, a.err, "the call that finishes within the grace")
			assert.False(t, a.res.IsError, "%v", a.res.Content)
			a = <-hung
			require.NoError(t, a.err, "the call still running at the end of the grace got no answer")
			require.True(t, a.res.IsError)
			assert.Contains(t, a.res.Content[0].(*mcp.TextContent).Text, "shutting down")
			assert.GreaterOrEqual(t, time.Since(sent), grace-100*time.Millisecond, "answered before the grace was over")

			assert.Eventually(t, func() bool {
				b, _ := os.ReadFile(record)
				return strings.Contains(string(b), "notifications/cancelled")
			}, 10*time.Second, 10*time.Millisecond, "the call was not cancelled upstream")
			if transport == "stdio" {
				_ = cs.Close() // the client closes its end: the command is reaped
			}
			code, ok := exited(grace + shutdownGrace + 5*time.Second)
			require.True(t, ok, "mcpvisor still runs %v after SIGTERM", time.Since(sent))
			assert.Equal(t, 0, code)
		})
	}
}

// waitExit waits up to d for cmd (started by a CommandTransport, which
// reaps it) to have exited, and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration) (int, bool) {
	if !assert.Eventually(t, func() bool { return cmd.ProcessState != nil }, d, 20*time.Millisecond) {
		return -1, false
	}
	return cmd.ProcessState.ExitCode(), true
}
