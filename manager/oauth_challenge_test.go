package manager_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/oauthtest"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// A server that lets anyone through the handshake and asks for a login
// only when its tools are listed waits for a login like one that asks at
// once, and the login its remedy names follows that challenge: nothing
// answers "the server does not ask for authorization".
func TestOAuthChallengeAfterHandshake(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHostFor(t, nil, &oauthtest.ResourceServerOptions{OpenHandshake: true}, nil)
	st, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Contains(t, st.LastError, "not logged in; not retried until someone logs in")
	require.Equal(t, manager.Remedy{Kind: manager.RemedyLogin, Server: "saas"}, st.Remedy)

	h.login(t, ctx)
	require.Equal(t, manager.StateConnected, state(t, h.m, "saas"))
	res, err := h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Equal(t, 1, h.as.Stats().Authorizations)
	require.Empty(t, h.rs.Unversioned(), "every request after the handshake names the negotiated protocol version")
	st, err = h.m.Status("saas")
	require.NoError(t, err)
	// server/discover asks in the newer generation first; the rest of the
	// session speaks the one negotiated.
	require.Contains(t, h.rs.ProtocolVersions(), st.Protocol)
}

// callAsync calls tool on the server in the background; the outcome
// arrives on the channel.
func callAsync(ctx context.Context, m *manager.Manager, tool string) <-chan error {
	done := make(chan error, 1)
	go func() {
		res, err := m.Call(ctx, tool, nil, manager.CallOptions{Timeout: time.Minute})
		if err == nil && res.IsError {
			err = fmt.Errorf("tool error: %v", res.Content)
		}
		done <- err
	}()
	return done
}

// A call that needs more scopes than the login granted asks for a login
// (the server waits for one, the login being its remedy), and, once a
// login that asks for the scopes granted and those the call needs lands
// within the call, the call is sent again and answered.
func TestOAuthStepUpRetriedAfterLogin(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	h.login(t, ctx)
	granted := h.grant(t, "saas").Scopes

	done := callAsync(ctx, h.m, "saas.admin")
	st, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Equal(t, manager.Remedy{Kind: manager.RemedyLogin, Server: "saas"}, st.Remedy)
	h.login(t, ctx)
	require.NoError(t, <-done)

	require.Contains(t, h.grant(t, "saas").Scopes, oauthtest.ScopeAdmin)
	require.Subset(t, h.grant(t, "saas").Scopes, granted, "the step-up login asks for what was granted too")
	rs := h.rs.Stats()
	require.Equal(t, 1, rs.InsufficientScope)
	require.Equal(t, 1, rs.ToolCalls, "the call reached the tool once, after the login")
	require.Equal(t, 1, h.as.Stats().Registrations, "the second login reuses the registration")
}

// A call that needs more scopes and sees no login come fails naming the
// server, the tool and the scopes, with the login as remedy; one whose
// login does not grant them is sent again once, and fails.
func TestOAuthStepUpWithoutLogin(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	h.login(t, ctx)

	callCtx, cancel := context.WithCancel(ctx)
	done := callAsync(callCtx, h.m, "saas.admin")
	_, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	cancel()
	err = <-done
	requireCode(t, err, manager.ErrInvocationFailed, "saas", `tools/call "admin"`)
	require.ErrorContains(t, err, `calling "admin" needs scopes "`+oauthtest.ScopeTools+" "+oauthtest.ScopeAdmin+`"`)
	requireRemedy(t, err, manager.RemedyLogin, "saas")
	require.ErrorIs(t, err, manager.ErrUnauthorized)
	require.ErrorIs(t, err, context.Canceled)

	// The user leaves the scope out at the consent: the call is sent
	// again after the login, refused again, and not sent a third time.
	h.as.SetWithheldScopes([]string{oauthtest.ScopeAdmin})
	h.login(t, ctx)
	done = callAsync(ctx, h.m, "saas.admin")
	_, err = h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	// The login connects the server, and the waiting call, sent again, is
	// refused: the login sees the server connected, or, if the refusal
	// comes first, says that it was refused again.
	if err := h.m.Login(ctx, "saas", manager.LoginOptions{Out: io.Discard, Browser: h.open}); err != nil {
		requireCode(t, err, manager.ErrConnectionFailed, "saas", "login")
		require.ErrorIs(t, err, manager.ErrUnauthorized)
	}
	err = <-done
	requireCode(t, err, manager.ErrInvocationFailed, "saas", `tools/call "admin"`)
	require.ErrorContains(t, err, `needs scopes "`+oauthtest.ScopeTools+" "+oauthtest.ScopeAdmin+`"`)
	requireRemedy(t, err, manager.RemedyLogin, "saas")
	require.Equal(t, 3, h.rs.Stats().InsufficientScope, "the first call met one refusal, the second one and the one its retry met")
	require.Zero(t, h.rs.Stats().ToolCalls)
}

// A server that moves to another authorization server, and asks for a
// login only after the handshake, waits for a login that goes to the new
// one: the client registers there anew, and the registration at the old
// one is not offered to it.
func TestOAuthMovedAuthServerRegistersAnew(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHostFor(t, nil, &oauthtest.ResourceServerOptions{OpenHandshake: true}, nil)
	h.login(t, ctx)
	old := h.grant(t, "saas")

	as2 := oauthtest.NewAuthServer(t, nil)
	h.rs.SetAuthServer(as2)
	require.NoError(t, h.m.Reconnect("saas"))
	st, err := h.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Contains(t, st.LastError, "the server now trusts authorization server "+as2.Issuer())
	require.Equal(t, manager.Remedy{Kind: manager.RemedyLogin, Server: "saas"}, st.Remedy)

	h.login(t, ctx)
	g := h.grant(t, "saas")
	require.Equal(t, as2.Issuer(), g.Issuer)
	require.Equal(t, 1, as2.Stats().Registrations)
	require.NotEqual(t, old.ClientID, g.ClientID)
	require.Contains(t, as2.Clients(), g.ClientID)
	require.NotContains(t, as2.Clients(), old.ClientID)
	res, err := h.m.Call(ctx, "saas.whoami", nil, manager.CallOptions{})
	require.NoError(t, err)
	require.False(t, res.IsError)
}

// linkAnswerer stands for a gateway client: it answers what a server asks
// with answer, and can open URLs when urls is set.
type linkAnswerer struct {
	urls   bool
	answer func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	asked  atomic.Int32
}

func (a *linkAnswerer) OpensURLs() bool  { return a.urls }
func (a *linkAnswerer) Offers() ask.Kind { return ask.Elicitation }
func (a *linkAnswerer) Elicit(ctx context.Context, _ ask.From, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	a.asked.Add(1)
	return a.answer(ctx, p)
}
func (a *linkAnswerer) CreateMessage(context.Context, ask.From, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return nil, ask.ErrNoAnswer
}
func (a *linkAnswerer) ListRoots(context.Context, ask.From) ([]*mcp.Root, error) {
	return nil, ask.ErrNoAnswer
}

// A call whose caller can open URLs and declines the login link fails with
// ErrLoginDeclined, the login as its remedy, without waiting out its time;
// a caller that cannot open URLs is not sent the link: the call fails as
// before, the login being the host's.
func TestOAuthLoginLinkToTheCaller(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	h.login(t, ctx)

	declines := &linkAnswerer{urls: true, answer: func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}}
	_, err := h.m.Call(ctx, "saas.admin", nil, manager.CallOptions{Client: "c1", Answerer: declines, Timeout: time.Hour})
	requireCode(t, err, manager.ErrConnectionFailed, "saas", `tools/call "admin"`)
	require.ErrorIs(t, err, manager.ErrLoginDeclined)
	requireRemedy(t, err, manager.RemedyLogin, "saas")
	require.EqualValues(t, 1, declines.asked.Load())

	noURLs := &linkAnswerer{answer: declines.answer}
	_, err = h.m.Call(ctx, "saas.admin", nil, manager.CallOptions{Client: "c2", Answerer: noURLs, Timeout: time.Hour})
	require.ErrorIs(t, err, manager.ErrUnauthorized)
	requireRemedy(t, err, manager.RemedyLogin, "saas")
	require.NotErrorIs(t, err, manager.ErrLoginDeclined)
	require.Zero(t, noURLs.asked.Load())
	require.Equal(t, 1, h.as.Stats().Authorizations)
}

// A login that does not grant what the server needs to connect at all
// says so as soon as the server refuses it, naming the server and the
// login as the remedy, rather than when the login's time runs out.
func TestOAuthLoginThatGrantsTooLittleFailsAtOnce(t *testing.T) {
	ctx := oauthContext(t)
	h := newOAuthHost(t, nil)
	h.as.SetWithheldScopes([]string{oauthtest.ScopeTools})
	err := h.m.Login(ctx, "saas", manager.LoginOptions{Out: io.Discard, Browser: h.open})
	requireCode(t, err, manager.ErrConnectionFailed, "saas", "login")
	require.ErrorIs(t, err, manager.ErrUnauthorized)
	requireRemedy(t, err, manager.RemedyLogin, "saas")
}
