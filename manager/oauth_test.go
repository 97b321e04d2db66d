package manager_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/oauthtest"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

// oauthHost is a manager in front of an OAuth-protected server, with its
// state in a directory of the test's, and the events it published.
type oauthHost struct {
	m    *manager.Manager
	as   *oauthtest.AuthServer
	rs   *oauthtest.ResourceServer
	dir  string
	evs  func() []events.Event
	open string // the stand-in browser
	// polls receives the server's name each time a server waiting for a
	// login has looked for one (every few milliseconds here); a full
	// buffer drops the news.
	polls chan string
}

func newOAuthHost(t *testing.T, asOpts *oauthtest.AuthServerOptions) *oauthHost {
	t.Helper()
	return newOAuthHostFor(t, asOpts, nil, nil)
}

// newOAuthHostFor is newOAuthHost with the resource server's options, and
// spec's fields added to the server's declaration.
func newOAuthHostFor(t *testing.T, asOpts *oauthtest.AuthServerOptions, rsOpts *oauthtest.ResourceServerOptions, spec map[string]any) *oauthHost {
	t.Helper()
	as := oauthtest.NewAuthServer(t, asOpts)
	rs := oauthtest.NewResourceServer(t, as, rsOpts)
	h := &oauthHost{as: as, rs: rs, dir: t.TempDir(), open: oauthtest.BrowserScript(t), polls: make(chan string, 1)}
	bus := events.NewBus(events.Options{})
	t.Cleanup(bus.Close)
	sub := bus.Subscribe(events.SubscribeOptions{QueueSize: 1 << 14})
	var seen []events.Event
	h.evs = func() []events.Event {
		for {
			e, ok, _ := sub.TryRecv()
			if !ok {
				return seen
			}
			seen = append(seen, e)
		}
	}
	h.m = newManager(t, manager.Options{Bus: bus, StateDir: h.dir})
	manager.SetLoginPoll(h.m, 5*time.Millisecond, func(server string) {
		select {
		case h.polls <- server:
		default:
		}
	})
	decl := map[string]any{"url": rs.URL()}
	maps.Copy(decl, spec)
	require.NoError(t, h.m.Add("saas", decode(t, decl)))
	return h
}

func (h *oauthHost) login(t *testing.T, ctx context.Context) {
	t.Helper()
	var out strings.Builder
	require.NoError(t, h.m.Login(ctx, "saas", manager.LoginOptions{Out: &out, Browser: h.open}))
	require.Contains(t, out.String(), "open this URL")
}

// grant is the stored grant of the server.
func (h *oauthHost) grant(t *testing.T, server string) oauth.Grant {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.dir, "oauth", server+".json"))
	require.NoError(t, err)
	var rec oauth.Record
	require.NoError(t, json.Unmarshal(data, &rec))
	return *rec.Grants[rec.Current]
}

// awaitPolls waits until the server has looked n times for a login while
// waiting for one.
func (h *oauthHost) awaitPolls(t *testing.T, ctx context.Context, server string, n int) {
	t.Helper()
	for n > 0 {
		select {
		case s := <-h.polls:
			if s == server {
				n--
			}
		case <-ctx.Done():
			t.Fatalf("%s did not look for a login: %v", server, ctx.Err())
		}
	}
}

func oauthContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// A server that asks for OAuth waits unauthorized, saying what to run; a
// login connects it and its tools work; the tokens never show.
func TestOAuthLoginConnects(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	st, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Contains(t, st.LastError, "not logged in; not retried until someone logs in")
	require.Equal(t, manager.Remedy{Kind: manager.RemedyLogin, Server: "saas"}, st.Remedy)
	_, err = h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	requireCode(t, err, manager.ErrConnectionFailed, "saas", `tools/call "whoami"`)
	requireRemedy(t, err, manager.RemedyLogin, "saas")
	require.ErrorIs(t, err, manager.ErrUnauthorized)

	h.login(t, ctx)
	require.Equal(t, manager.StateConnected, state(t, h.m, "saas"))
	res, err := h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, 1, h.as.Stats().Authorizations)
	requireNoSecrets(t, h, h.grant(t, "saas"))
}

// A token the server stops taking is refreshed once, silently: the call
// that met the refusal says so and is not repeated, the next one works.
// A refresh the authorization server refuses puts the server back to
// unauthorized with the login command, and nothing retries it.
func TestOAuthRefreshThenRevoked(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	h.login(t, ctx)
	calls := h.rs.Stats().ToolCalls

	h.as.ExpireAccessTokens()
	_, err := h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.ErrorContains(t, err, "a new one was obtained, but the request was not sent again")
	require.Equal(t, calls, h.rs.Stats().ToolCalls, "the refused call must not be sent again")
	require.Equal(t, 1, h.as.Stats().Refreshes)
	_, err = h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)
	require.Equal(t, manager.StateConnected, state(t, h.m, "saas"))

	g := h.grant(t, "saas")
	require.True(t, h.as.Revoke(g.Token.Refresh))
	_, err = h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	requireRemedy(t, err, manager.RemedyLogin, "saas")
	st, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Contains(t, st.LastError, "refused to refresh the access token (invalid_grant")
	require.Equal(t, manager.RemedyLogin, st.Remedy.Kind)
	as, rs := h.as.Stats(), h.rs.Stats()
	require.Equal(t, 1, as.RefreshesRejected)
	// The server looks for a login in the state directory a few times
	// while waiting; none of it may reach either server.
	h.awaitPolls(t, ctx, "saas", 3)
	require.Equal(t, as, h.as.Stats())
	require.Equal(t, rs, h.rs.Stats())
	require.Equal(t, manager.StateUnauthorized, state(t, h.m, "saas"))
	requireNoSecrets(t, h, g)
}

// A call that needs more scopes than the host's token has, when a login
// made meanwhile (here by another process, as `mcpvisor login` beside the
// running host) granted them, is answered with that login's token from the
// next call on: the call says so and is not repeated, and the server never
// waits for a login.
func TestOAuthStepUpCoveredByStoredGrant(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	h.login(t, ctx)
	other := oauth.NewKeeper(oauth.KeeperOptions{Dir: h.dir})
	require.NoError(t, other.Login(ctx, oauth.LoginRequest{
		Name: "saas", Key: manager.NameKey("saas"), URL: h.rs.URL(), Browser: h.open,
		Config: oauth.Config{Scopes: []string{oauthtest.ScopeTools, oauthtest.ScopeAdmin}},
	}))
	calls := h.rs.Stats().ToolCalls

	_, err := h.m.Call(ctx, "saas.admin", nil, manager.CallOptions{})
	var covered *oauth.TokenRefreshedError
	require.ErrorAs(t, err, &covered)
	require.Contains(t, covered.Scopes, oauthtest.ScopeAdmin)
	require.Equal(t, calls, h.rs.Stats().ToolCalls, "the refused call must not be sent again")
	res, err := h.m.Call(ctx, "saas.admin", nil, manager.CallOptions{})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, manager.StateConnected, state(t, h.m, "saas"))
	require.Equal(t, 2, h.as.Stats().Authorizations, "only the other process logged in again")
}

// A legacy HTTP+SSE server behind OAuth is logged in to like a streamable
// one: it waits unauthorized, a login connects it, a reconnect and a
// restart use the stored token, and a grant the authorization server
// revoked puts it back to unauthorized with the login command.
func TestOAuthSSE(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHostFor(t, nil, &oauthtest.ResourceServerOptions{SSE: true}, map[string]any{"transport": "sse"})
	st, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Contains(t, st.LastError, "not logged in; not retried until someone logs in")

	h.login(t, ctx)
	_, err = h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)

	require.NoError(t, h.m.Reconnect("saas"))
	_, err = h.m.Wait(ctx, "saas", manager.StateConnected)
	require.NoError(t, err)
	_, err = h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)

	restarted := newManager(t, manager.Options{StateDir: h.dir})
	require.NoError(t, restarted.Add("saas", decode(t, map[string]any{"url": h.rs.URL(), "transport": "sse"})))
	_, err = restarted.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)
	require.Equal(t, 1, h.as.Stats().Authorizations, "a reconnect and a restart use the stored token")

	g := h.grant(t, "saas")
	require.True(t, h.as.Revoke(g.Token.Refresh))
	_, err = h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.Error(t, err)
	st, err = h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Equal(t, manager.RemedyLogin, st.Remedy.Kind)
	requireNoSecrets(t, h, g)
}

// requireNoSecrets checks that no token of g appears in the events or the
// status.
func requireNoSecrets(t *testing.T, h *oauthHost, g oauth.Grant) {
	t.Helper()
	var all strings.Builder
	for _, e := range h.evs() {
		b, _ := json.Marshal(e)
		all.Write(b)
	}
	b, _ := json.Marshal(h.m.Statuses())
	all.Write(b)
	for _, secret := range []string{g.Token.Access, g.Token.Refresh, g.ClientSecret} {
		if secret != "" {
			require.NotContains(t, all.String(), secret)
		}
	}
}

func state(t *testing.T, m *manager.Manager, name string) manager.State {
	t.Helper()
	st, err := m.Status(name)
	require.NoError(t, err)
	return st.State
}

// A redirect that names another issuer (a mix-up) fails the login: nothing
// is stored and the server keeps waiting for a login.
func TestOAuthWrongIssuerRejected(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	_, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	h.as.SetIssBehavior(oauthtest.IssWrong)
	err = h.m.Login(ctx, "saas", manager.LoginOptions{Browser: h.open})
	requireCode(t, err, manager.ErrConnectionFailed, "saas", "login")
	require.ErrorContains(t, err, "does not match expected issuer")
	rec, err := oauth.NewStore(h.dir).Load(manager.NameKey("saas"))
	require.NoError(t, err)
	require.Empty(t, rec.Grants, "a failed login stores no grant")
	require.NotNil(t, rec.Challenge, "the server's challenge is kept for the next login")
	require.Equal(t, 0, h.as.Stats().CodeExchanges)
	require.Equal(t, manager.StateUnauthorized, state(t, h.m, "saas"))
}

// Two servers of one authorization server each get their own grant.
func TestOAuthTwoServersSeparateTokens(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	other := oauthtest.NewResourceServer(t, h.as, nil)
	h.as.AllowResource(other.URL())
	require.NoError(t, h.m.Add("other", decode(t, map[string]any{"url": other.URL()})))
	h.login(t, ctx)
	require.NoError(t, h.m.Login(ctx, "other", manager.LoginOptions{Browser: h.open}))
	a, b := h.grant(t, "saas"), h.grant(t, "other")
	require.NotEqual(t, a.Token.Access, b.Token.Access)
	require.Equal(t, other.URL(), b.Resource)
	require.Equal(t, h.rs.URL(), a.Resource)
	for _, name := range []string{"saas.whoami", "other.whoami"} {
		_, err := h.m.Call(ctx, name, nil, manager.CallOptions{})
		require.NoError(t, err, name)
	}
	// Logging out of one leaves the other alone.
	had, err := h.m.Logout("saas")
	require.NoError(t, err)
	require.True(t, had)
	_, err = h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	_, err = h.m.Call(ctx, "other.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)
}

// A server that moves to an authorization server the host has no login
// for waits for one, without refreshing at the one it left; the login goes
// to the new one.
func TestOAuthChangedAuthServer(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	h.login(t, ctx)
	as2 := oauthtest.NewAuthServer(t, nil)
	h.rs.SetAuthServer(as2)
	_, err := h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.ErrorContains(t, err, "the server now trusts authorization server "+as2.Issuer())
	st, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Equal(t, manager.RemedyLogin, st.Remedy.Kind)
	require.Zero(t, h.as.Stats().Refreshes, "a refresh at the authorization server it left cannot help")
	h.login(t, ctx)
	require.Equal(t, as2.Issuer(), h.grant(t, "saas").Issuer)
	_, err = h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)
}

// A server that moves to an authorization server the host still holds a
// grant from is followed there without a login: the call that met the
// refusal says so and is not repeated, and the next one carries that
// grant's token (a server that waited for a login would not be connected
// again without one).
func TestOAuthChangedAuthServerKnownGrant(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	h.login(t, ctx)
	as2 := oauthtest.NewAuthServer(t, nil)
	h.rs.SetAuthServer(as2)
	_, err := h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.Error(t, err)
	h.login(t, ctx) // the store now holds a grant from each
	calls := h.rs.Stats().ToolCalls

	h.rs.SetAuthServer(h.as) // back to the first
	_, err = h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	var switched *oauth.TokenRefreshedError
	require.ErrorAs(t, err, &switched)
	require.Equal(t, h.as.Issuer(), switched.Issuer)
	require.Equal(t, calls, h.rs.Stats().ToolCalls, "the refused call must not be sent again")
	res, err := h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, h.as.Issuer(), h.grant(t, "saas").Issuer, "the switch is kept for a restart")
	require.Equal(t, 1, h.as.Stats().Authorizations)
	require.Equal(t, 1, as2.Stats().Authorizations)
	require.Equal(t, manager.StateConnected, state(t, h.m, "saas"))
}
