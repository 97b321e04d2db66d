package manager_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/oauthtest"
	"github.com/mcpvisor/mcpvisor/manager"
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
}
