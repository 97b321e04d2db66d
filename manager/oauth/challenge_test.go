package oauth_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/oauthtest"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

// A login with nothing recorded, to a server that lets the handshake
// through and asks for a login only when its tools are listed, goes as far
// into a session as it takes to be asked, and logs in there.
func TestLoginFindsChallengeAfterHandshake(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, &oauthtest.ResourceServerOptions{OpenHandshake: true})
	k := oauth.NewKeeper(oauth.KeeperOptions{Dir: t.TempDir()})
	require.NoError(t, login(t, ctx, k, "saas", rs.URL(), oauth.Config{}))
	require.Equal(t, 1, as.Stats().Authorizations)

	cs := connect(t, ctx, k.Source("saas", "saas", oauth.Config{}), rs.URL())
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: oauthtest.ToolWhoAmI})
	require.NoError(t, err)
	require.False(t, res.IsError)
}

// A login follows the challenge another process met and kept (here a
// step-up on a call, which no probe would meet): it asks for the scopes
// the challenge named on top of those granted, and the challenge is
// forgotten once answered.
func TestLoginFollowsRecordedChallenge(t *testing.T) {
	ctx := testContext(t)
	as := oauthtest.NewAuthServer(t, nil)
	rs := oauthtest.NewResourceServer(t, as, nil)
	dir := t.TempDir()
	host := oauth.NewKeeper(oauth.KeeperOptions{Dir: dir})
	require.NoError(t, login(t, ctx, host, "saas", rs.URL(), oauth.Config{}))
	cs := connect(t, ctx, host.Source("saas", "saas", oauth.Config{}), rs.URL())
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: oauthtest.ToolAdmin})
	var login *oauth.LoginRequiredError
	require.ErrorAs(t, err, &login)

	rec, err := host.Store().Load("saas")
	require.NoError(t, err)
	require.NotNil(t, rec.Challenge, "the step-up is kept for the next login")
	require.Equal(t, 403, rec.Challenge.Status)

	other := oauth.NewKeeper(oauth.KeeperOptions{Dir: dir}) // `mcpvisor login` beside the host
	require.NoError(t, other.Login(ctx, oauth.LoginRequest{Name: "saas", Key: "saas", URL: rs.URL(), Browser: oauthtest.BrowserScript(t)}))
	rec, err = other.Store().Load("saas")
	require.NoError(t, err)
	require.Nil(t, rec.Challenge)
	require.Subset(t, rec.Grants[rec.Current].Scopes, []string{oauthtest.ScopeTools, oauthtest.ScopeAdmin})

	cs = connect(t, ctx, other.Source("saas", "saas", oauth.Config{}), rs.URL())
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: oauthtest.ToolAdmin})
	require.NoError(t, err)
	require.False(t, res.IsError)
}
