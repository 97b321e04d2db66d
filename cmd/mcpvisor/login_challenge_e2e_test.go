//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/oauthtest"
)

// A server that answers the handshake and asks for a login only when its
// tools are listed: the host waits for a login and its log says which
// command to run; that command, run as the log words it, logs in and
// connects, and the host then uses the login.
func TestLoginFromHintAfterHandshakeE2E(t *testing.T) {
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, &oauthtest.ResourceServerOptions{OpenHandshake: true})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.lua"),
		[]byte(fmt.Sprintf("mcp_add(%q, {url = %q})\n", "saas", rs.URL())), 0o644))
	env := []string{"BROWSER=" + oauthtest.BrowserScript(t), "XDG_STATE_HOME=" + t.TempDir()}
	run := func(args ...string) outcome {
		return runBinary(t, invocation{dir: dir, args: args, env: env})
	}

	o := run("-c", "other.lua", "-e", `assert(mcp_wait("saas", "unauthorized")); return mcp_status("saas").remedy`)
	require.Equal(t, 0, o.code, o.stderr)
	require.Equal(t, "log in with mcp_login(\"saas\")\n", o.stdout)
	hint := regexp.MustCompile("log in with `mcpvisor (login [^`]*)`").FindStringSubmatch(o.stderr)
	require.NotNil(t, hint, o.stderr)
	require.Equal(t, "login -c other.lua saas", hint[1])

	o = run(strings.Fields(hint[1])...)
	require.Equal(t, 0, o.code, o.stderr)
	require.Contains(t, o.stdout, "To log in to saas, open this URL in a browser:")
	require.Contains(t, o.stdout, "Connected to saas (2 tools).")

	o = run("-c", "other.lua", "-e", `assert(mcp_wait("saas", "connected")); assert(mcp_call("saas.whoami")); return "ok"`)
	require.Equal(t, 0, o.code, o.stderr)
	require.Equal(t, "ok\n", o.stdout)
	require.Equal(t, 1, as.Stats().Authorizations)
}
