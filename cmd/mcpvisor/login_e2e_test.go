//go:build linux

package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/oauthtest"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

// The whole login story through the binary: `mcpvisor login` with the
// flag after the name opens $BROWSER and connects; the tokens are kept
// 0600 in a 0700 directory; a restart uses them without a new
// authorization; mcp_login does the same from Lua; logout forgets them;
// and no token shows in any output, even at debug level.
func TestLoginLogoutE2E(t *testing.T) {
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, nil)
	dir := t.TempDir()
	state := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "startup.lua"),
		[]byte(fmt.Sprintf("mcp_add(%q, {url = %q})\n", "saas", rs.URL())), 0o644))
	// Spans are exported to stderr too, so the search for tokens below
	// covers them.
	env := []string{"BROWSER=" + oauthtest.BrowserScript(t), "XDG_STATE_HOME=" + state, "OTEL_TRACES_EXPORTER=console"}
	var outputs []string
	run := func(args ...string) outcome {
		o := runBinary(t, invocation{dir: dir, args: args, env: env})
		outputs = append(outputs, o.stdout, o.stderr)
		return o
	}

	o := run("login", "saas", "-c", "startup.lua")
	require.Equal(t, 0, o.code, o.stderr)
	require.Contains(t, o.stdout, "To log in to saas, open this URL in a browser:")
	require.Contains(t, o.stdout, "Connected to saas (2 tools).")
	require.Equal(t, 1, as.Stats().Authorizations)

	fi, err := os.Stat(filepath.Join(state, "mcpvisor", "oauth"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	file := filepath.Join(state, "mcpvisor", "oauth", "saas.json")
	fi, err = os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	first := storedGrant(t, file)

	code := `assert(mcp_wait("saas", "connected")); assert(mcp_call("saas.whoami")); return "ok"`
	o = run("-c", "startup.lua", "--log-level", "debug", "-e", code)
	require.Equal(t, 0, o.code, o.stderr)
	require.Equal(t, "ok\n", o.stdout)
	require.Equal(t, 1, as.Stats().Authorizations, "a restart must use the stored token")

	o = run("logout", "-c", "startup.lua", "saas")
	require.Equal(t, 0, o.code, o.stderr)
	require.Contains(t, o.stdout, "Logged out of saas")
	require.NoFileExists(t, file)

	// With another config, the command to run names it.
	data, err := os.ReadFile(filepath.Join(dir, "startup.lua"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.lua"), data, 0o644))
	o = run("-c", "other.lua", "-e", `assert(mcp_wait("saas", "unauthorized")); return mcp_status("saas").remedy`)
	require.Equal(t, 0, o.code, o.stderr)
	require.Equal(t, "log in with mcp_login(\"saas\")\n", o.stdout, "Lua is told the Lua call")
	require.Contains(t, o.stderr, "log in with `mcpvisor login -c other.lua saas`", "the log, read in a shell, the command")

	code = `local ok, why = mcp_wait("saas", "unauthorized")
assert(ok, why)
assert(mcp_status("saas").last_error:find("not logged in", 1, true), mcp_status("saas").last_error)
assert(mcp_login("saas"))
assert(mcp_call("saas.whoami"))
return "in"`
	o = run("-c", "startup.lua", "--log-level", "debug", "-e", code)
	require.Equal(t, 0, o.code, o.stderr)
	require.Contains(t, o.stdout, "open this URL")
	require.True(t, strings.HasSuffix(o.stdout, "in\n"), o.stdout)
	require.Equal(t, 2, as.Stats().Authorizations)
	second := storedGrant(t, file)

	all := strings.Join(outputs, "\n")
	require.Contains(t, all, `"Name":"mcp.tool_call"`, "spans were not exported, so not searched")
	for _, g := range []oauth.Grant{first, second} {
		for _, secret := range []string{g.Token.Access, g.Token.Refresh} {
			require.NotEmpty(t, secret)
			require.NotContains(t, all, secret)
		}
	}
}

func storedGrant(t *testing.T, file string) oauth.Grant {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var rec oauth.Record
	require.NoError(t, json.Unmarshal(data, &rec))
	return *rec.Grants[rec.Current]
}

// A client registered ahead of time, whose secret the config names as
// "${VAR}": the login and a restart work with it, and the secret never
// shows in any output (logs at debug level, events, status, check, spans),
// nor do the tokens.
func TestLoginPreregisteredSecretE2E(t *testing.T) {
	as := oauthtest.NewAuthServer(t, &oauthtest.AuthServerOptions{DisableRegistration: true})
	rs := oauthtest.NewResourceServer(t, as, nil)
	secret := "e2e-client-secret-" + rand.Text()
	require.NoError(t, as.RegisterClient(oauthtest.Client{
		ID: "mcpvisor-e2e", Secret: secret, RedirectURIs: []string{"http://127.0.0.1/callback"},
	}))
	dir := t.TempDir()
	state := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "startup.lua"), []byte(fmt.Sprintf(
		"mcp_add(%q, {url = %q, auth = {client_id = %q, client_secret = \"${E2E_CLIENT_SECRET}\"}})\n",
		"corp", rs.URL(), "mcpvisor-e2e")), 0o644))
	env := []string{"BROWSER=" + oauthtest.BrowserScript(t), "XDG_STATE_HOME=" + state,
		"OTEL_TRACES_EXPORTER=console", "E2E_CLIENT_SECRET=" + secret}
	var outputs []string
	run := func(args ...string) outcome {
		o := runBinary(t, invocation{dir: dir, args: args, env: env})
		outputs = append(outputs, o.stdout, o.stderr)
		return o
	}

	o := run("login", "corp", "-c", "startup.lua")
	require.Equal(t, 0, o.code, o.stderr)
	require.Contains(t, o.stdout, "Connected to corp")
	g := storedGrant(t, filepath.Join(state, "mcpvisor", "oauth", "corp.json"))
	require.Equal(t, "mcpvisor-e2e", g.ClientID)
	require.Empty(t, g.ClientSecret, "a secret from the config stays in the config")

	// A restart refreshes with the secret (the access token is made to
	// expire first), shows status and events, and exports spans.
	as.ExpireAccessTokens()
	code := `assert(mcp_wait("corp", "connected"))
assert(mcp_call("corp.whoami"))
for _, e in ipairs(mcp_events(500)) do print(json.encode(e)) end
print(json.encode(mcp_status("corp")))
return "ok"`
	o = run("-c", "startup.lua", "--log-level", "debug", "-e", code)
	require.Equal(t, 0, o.code, o.stderr)
	require.True(t, strings.HasSuffix(o.stdout, "ok\n"), o.stdout)
	require.GreaterOrEqual(t, as.Stats().Refreshes, 1, "the refresh authenticated with the secret")
	refreshed := storedGrant(t, filepath.Join(state, "mcpvisor", "oauth", "corp.json"))

	// A login from Lua, logged at debug level.
	o = run("-c", "startup.lua", "--log-level", "debug", "-e", `assert(mcp_login("corp")); assert(mcp_call("corp.whoami")); return "in"`)
	require.Equal(t, 0, o.code, o.stderr)
	require.True(t, strings.HasSuffix(o.stdout, "in\n"), o.stdout)
	require.Equal(t, 2, as.Stats().Authorizations)

	o = run("check", "-c", "startup.lua")
	require.Equal(t, 0, o.code, o.stderr)

	last := storedGrant(t, filepath.Join(state, "mcpvisor", "oauth", "corp.json"))
	all := strings.Join(outputs, "\n")
	require.Contains(t, all, `"Name":"mcp.tool_call"`, "spans were not exported, so not searched")
	require.Contains(t, all, `"kind":"connected"`, "events were not printed, so not searched")
	for _, s := range []string{secret, g.Token.Access, g.Token.Refresh, refreshed.Token.Access, refreshed.Token.Refresh, last.Token.Access, last.Token.Refresh} {
		require.NotEmpty(t, s)
		// Say where, not what: a failure must not print the secret either.
		if i := strings.Index(all, s); i >= 0 {
			t.Fatalf("a secret shows in the output after %q", all[max(0, i-200):i])
		}
	}
}
