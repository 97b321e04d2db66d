//go:build linux

package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// `serve --http` with a token serves the web console at /ui: the login
// form to a request without the token, the servers to one with it; and a
// browser's open live stream does not hold up the exit on SIGTERM (the
// long shutdown grace would otherwise be waited out in full).
func TestServeHTTPConsole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo"))
	const token = "0123456789abcdef0123456789abcdef"
	p := start(t, invocation{dir: dir, env: []string{"MCPVISOR_TOKEN=" + token},
		args: []string{"serve", "--http", "127.0.0.1:0", "-c", path, "--log-level", "info", "--shutdown-grace", "30s"}})
	log := p.stderr.waitFor(t, "the serving log line", 20*time.Second, servingURL.MatchString)
	base := servingURL.FindStringSubmatch(log)[1]
	require.Contains(t, log, "console="+base+"/ui")

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	fetch := func(path, auth string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	code, body := fetch("/ui", "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Contains(t, body, `type="password"`)
	require.NotContains(t, body, "demo")
	require.Eventually(t, func() bool {
		code, body := fetch("/ui", token)
		return code == http.StatusOK && strings.Contains(body, `data-state="connected"`) && strings.Contains(body, "echo")
	}, 20*time.Second, 50*time.Millisecond, "the console never showed demo connected")

	req, err := http.NewRequestWithContext(ctx, "GET", base+"/ui/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.True(t, bufio.NewScanner(resp.Body).Scan(), "the stream sent nothing")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.True(t, p.wait(15*time.Second), "mcpvisor serve --http still runs after SIGTERM: the console's stream held it up")
	require.Equal(t, 0, p.cmd.ProcessState.ExitCode(), "exit code")
}
