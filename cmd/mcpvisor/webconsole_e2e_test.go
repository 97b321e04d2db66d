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

// Reload startup.lua on the console reloads the file the host runs from
// (here not watched, so only the button reloads it) and the servers page
// then says what it changed; the view token sees no such button.
func TestConsoleReloadsTheConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "startup.lua")
	writeConfig(t, path, demoDecl("demo"))
	const token, view = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	p := start(t, invocation{dir: dir, env: []string{"MCPVISOR_TOKEN=" + token, "MCPVISOR_VIEW_TOKEN=" + view},
		args: []string{"serve", "--http", "127.0.0.1:0", "-c", path, "--no-watch", "--log-level", "info"}})
	log := p.stderr.waitFor(t, "the serving log line", 20*time.Second, servingURL.MatchString)
	base := servingURL.FindStringSubmatch(log)[1]

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	do := func(method, path, auth string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+auth)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	_, body := do("GET", "/ui", view)
	require.NotContains(t, body, `action="/ui/reload"`)
	_, body = do("GET", "/ui", token)
	require.NotContains(t, body, `action="/ui/reload"`, "a bearer token's page has no forms: it posts without them")
	code, _ := do("POST", "/ui/reload", view)
	require.Equal(t, http.StatusForbidden, code)

	writeConfig(t, path, demoDecl("demo")+demoDecl("second"))
	code, _ = do("POST", "/ui/reload", token)
	require.Equal(t, http.StatusSeeOther, code)
	require.Eventually(t, func() bool {
		_, body := do("GET", "/ui", token)
		return strings.Contains(body, `reload the config: <span class="ok">done</span>`) &&
			strings.Contains(body, "startup.lua: added second; 1 unchanged")
	}, 30*time.Second, 50*time.Millisecond, "the servers page never said the reload added second")
}
