package oauth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/oauthtest"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect opens an MCP session to rs through src's transport.
func connect(t *testing.T, ctx context.Context, src *oauth.Source, url string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   url,
		HTTPClient: &http.Client{Transport: src.Transport(url, http.DefaultTransport)},
		MaxRetries: -1,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func login(t *testing.T, ctx context.Context, k *oauth.Keeper, name, url string, cfg oauth.Config) error {
	return k.Login(ctx, oauth.LoginRequest{Name: name, Key: name, URL: url, Config: cfg, Browser: oauthtest.BrowserScript(t)})
}

// A login through the browser command stores a grant that the transport
// then uses; the files are the user's only; a second keeper (a restart)
// uses the stored token without a new authorization.
func TestLoginStoresAndRestartReuses(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, nil)
	dir := t.TempDir()
	k := oauth.NewKeeper(oauth.KeeperOptions{Dir: dir})
	require.NoError(t, login(t, ctx, k, "saas", rs.URL(), oauth.Config{}))
	require.Equal(t, 1, as.Stats().Authorizations)

	fi, err := os.Stat(filepath.Join(dir, "oauth"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dir, "oauth", "saas.json"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	k2 := oauth.NewKeeper(oauth.KeeperOptions{Dir: dir})
	cs := connect(t, ctx, k2.Source("saas", "saas", oauth.Config{}), rs.URL())
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: oauthtest.ToolWhoAmI})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, 1, as.Stats().Authorizations, "a restart must not authorize again")
}

// A 401 for a token the server no longer takes is answered by one silent
// refresh; the request fails with a clear error and the next one works.
func TestRejectedTokenRefreshesOnce(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, nil)
	k := oauth.NewKeeper(oauth.KeeperOptions{Dir: t.TempDir()})
	require.NoError(t, login(t, ctx, k, "saas", rs.URL(), oauth.Config{}))
	src := k.Source("saas", "saas", oauth.Config{})
	cs := connect(t, ctx, src, rs.URL())
	as.ExpireAccessTokens()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: oauthtest.ToolWhoAmI})
	var refreshed *oauth.TokenRefreshedError
	require.ErrorAs(t, err, &refreshed)
	require.Equal(t, 1, as.Stats().Refreshes)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: oauthtest.ToolWhoAmI})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, 1, as.Stats().Authorizations)
}

// A login asks for the scopes granted before and those a step-up asked
// for since, on top of what the server names, so that logging in again
// never narrows what the host may do.
func TestLoginAsksForGrantedAndPendingScopes(t *testing.T) {
	ctx := testContext(t)
	const extra = "mcp:extra"
	as := oauthtest.NewAuthServer(t, &oauthtest.AuthServerOptions{Scopes: []string{oauthtest.ScopeTools, oauthtest.ScopeAdmin, extra}})
	rs := oauthtest.NewResourceServer(t, as, nil)
	dir := t.TempDir()
	k := oauth.NewKeeper(oauth.KeeperOptions{Dir: dir})
	require.NoError(t, login(t, ctx, k, "saas", rs.URL(), oauth.Config{Scopes: []string{oauthtest.ScopeTools, extra}}))

	cs := connect(t, ctx, k.Source("saas", "saas", oauth.Config{}), rs.URL())
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: oauthtest.ToolAdmin})
	var needed *oauth.LoginRequiredError
	require.ErrorAs(t, err, &needed)

	require.NoError(t, login(t, ctx, k, "saas", rs.URL(), oauth.Config{}))
	rec, err := k.Store().Load("saas")
	require.NoError(t, err)
	require.Subset(t, rec.Grants[rec.Current].Scopes, []string{oauthtest.ScopeTools, extra, oauthtest.ScopeAdmin})
}

// A dynamic registration the authorization server has forgotten is not
// offered again (the user would only see an unknown client page): the
// login registers anew and completes, without a logout first.
func TestLoginReplacesForgottenRegistration(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, nil)
	k := oauth.NewKeeper(oauth.KeeperOptions{Dir: t.TempDir()})
	require.NoError(t, login(t, ctx, k, "saas", rs.URL(), oauth.Config{}))
	first, err := k.Store().Load("saas")
	require.NoError(t, err)
	require.True(t, first.Grants[first.Current].Registered)

	// Still known: the next login reuses it.
	require.NoError(t, login(t, ctx, k, "saas", rs.URL(), oauth.Config{}))
	require.Equal(t, 1, as.Stats().Registrations)

	require.Equal(t, 1, as.ForgetClients())
	require.NoError(t, login(t, ctx, k, "saas", rs.URL(), oauth.Config{}))
	require.Equal(t, 2, as.Stats().Registrations)
	second, err := k.Store().Load("saas")
	require.NoError(t, err)
	require.NotEqual(t, first.Grants[first.Current].ClientID, second.Grants[second.Current].ClientID)

	cs := connect(t, ctx, k.Source("saas", "saas", oauth.Config{}), rs.URL())
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: oauthtest.ToolWhoAmI})
	require.NoError(t, err)
}

// failTokenEndpoint answers the code exchange at as's token endpoint with
// a refusal whose body carries a secret; everything else goes through.
type failTokenEndpoint struct {
	as   *oauthtest.AuthServer
	body string
}

func (f failTokenEndpoint) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path != "/token" || !strings.HasPrefix(f.as.URL(), "http://"+r.URL.Host) {
		return http.DefaultTransport.RoundTrip(r)
	}
	rec := httptest.NewRecorder()
	if strings.HasPrefix(f.body, "{") {
		rec.Header().Set("Content-Type", "application/json")
	}
	rec.WriteHeader(http.StatusBadRequest)
	fmt.Fprint(rec, f.body)
	return rec.Result(), nil
}

// A token endpoint's refusal of the code is shown as its status, code
// and description; the rest of its body is not shown.
func TestLoginErrorLeavesOutTokenEndpointBody(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"error":"invalid_grant","error_description":"code used","debug":"client_secret=s3cr3t"}`, "invalid_grant: code used (400 Bad Request)"},
		{"upstream said client_secret=s3cr3t", "400 Bad Request"},
	} {
		ctx := testContext(t)
		as := oauthtest.NewAuthServer(t, nil)
		rs := oauthtest.NewResourceServer(t, as, nil)
		k := oauth.NewKeeper(oauth.KeeperOptions{Dir: t.TempDir(), Transport: failTokenEndpoint{as, tc.body}})
		err := login(t, ctx, k, "saas", rs.URL(), oauth.Config{})
		require.Error(t, err)
		require.NotContains(t, err.Error(), "s3cr3t")
		require.Contains(t, err.Error(), tc.want)
		require.NotContains(t, err.Error(), "login:", "the caller says it is a login")
	}
}

// A server with no metadata anywhere, whose default registration
// endpoint refuses, fails the login with an error that says metadata
// discovery failed, where registration was tried and what it answered,
// without the answer's body.
func TestLoginErrorSaysMetadataDiscoveryFailed(t *testing.T) {
	ctx := testContext(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/mcp":
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/register":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, "internal detail s3cr3t")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	k := oauth.NewKeeper(oauth.KeeperOptions{Dir: t.TempDir()})
	err := login(t, ctx, k, "linear", srv.URL+"/mcp", oauth.Config{})
	require.Error(t, err)
	msg := err.Error()
	require.Contains(t, msg, "metadata discovery failed")
	require.Contains(t, msg, srv.URL+"/register")
	require.Contains(t, msg, "401 Unauthorized")
	require.NotContains(t, msg, "s3cr3t")
	require.NotContains(t, msg, "login:")
}
