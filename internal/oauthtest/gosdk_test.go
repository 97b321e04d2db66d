package oauthtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests log in with the go-sdk's own client: an
// auth.AuthorizationCodeHandler as the OAuthHandler of a
// mcp.StreamableClientTransport. They pin both the fixture and what that
// client does, which the login feature builds on.
//
// The standalone SSE stream is turned off so that every token request the
// counts see comes from the calls the test makes.

// newDCRHandler is a go-sdk handler that registers itself dynamically as a
// public native client that may refresh, and opens the authorization URL
// with open.
func newDCRHandler(t *testing.T, cb *Callback, open func(context.Context, string) error, change ...func(*auth.AuthorizationCodeHandlerConfig)) *auth.AuthorizationCodeHandler {
	t.Helper()
	cfg := &auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:              "oauthtest",
				RedirectURIs:            []string{cb.URL()},
				TokenEndpointAuthMethod: "none",
				GrantTypes:              []string{"authorization_code", "refresh_token"},
			},
		},
		AuthorizationCodeFetcher: cb.Fetcher(open),
		RequestRefreshToken:      true,
	}
	for _, f := range change {
		f(cfg)
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	require.NoError(t, err)
	return h
}

// connect opens an MCP session with rs through h, and closes it when the
// test ends (before the servers close).
func connect(t *testing.T, rs *ResourceServer, h auth.OAuthHandler) (*mcp.ClientSession, error) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "oauthtest-client", Version: "v0.0.1"}, nil)
	s, err := c.Connect(testContext(t), &mcp.StreamableClientTransport{
		Endpoint:             rs.URL(),
		OAuthHandler:         h,
		DisableStandaloneSSE: true,
	}, nil)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// call calls a tool that answers an Identity.
func call(t *testing.T, s *mcp.ClientSession, tool string) Identity {
	t.Helper()
	res, err := s.CallTool(testContext(t), &mcp.CallToolParams{Name: tool})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var id Identity
	require.NoError(t, json.Unmarshal(raw, &id))
	return id
}

// runBrowser opens URLs with the program at path, as code that honours
// $BROWSER would.
func runBrowser(path string) func(context.Context, string) error {
	return func(ctx context.Context, u string) error {
		out, err := exec.CommandContext(ctx, path, u).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w: %s", path, err, out)
		}
		return nil
	}
}

// A first connection logs in: 401, discovery, registration, the browser
// (the $BROWSER script), code exchange; the retried request and the tool
// call carry a token for this resource with the scopes of the metadata.
func TestGoSDKLogin(t *testing.T) {
	as := NewAuthServer(t, nil)
	rs := NewResourceServer(t, as, nil)
	cb := NewCallback(t)
	s, err := connect(t, rs, newDCRHandler(t, cb, runBrowser(BrowserScript(t))))
	require.NoError(t, err)

	id := call(t, s, ToolWhoAmI)
	require.Len(t, as.Clients(), 1)
	assert.Equal(t, Identity{
		Subject:  "test-user",
		ClientID: as.Clients()[0],
		Issuer:   as.Issuer(),
		Resource: rs.URL(),
		// The metadata's scopes, and offline_access because the handler
		// wants refresh tokens and the server lists it.
		Scopes: []string{ScopeTools, ScopeOfflineAccess},
	}, id)
	assert.Equal(t, Stats{MetadataFetches: 1, Registrations: 1, Authorizations: 1, CodeExchanges: 1}, as.Stats())
	assert.Equal(t, ResourceStats{Unauthorized: 1, ToolCalls: 1}, rs.Stats())
}

// An access token that runs out is refreshed without the browser. The
// lifetime is under golang.org/x/oauth2's 10 seconds of early expiry, so
// every request refreshes.
func TestGoSDKSilentRefresh(t *testing.T) {
	as := NewAuthServer(t, &AuthServerOptions{AccessTokenLifetime: 5 * time.Second})
	rs := NewResourceServer(t, as, nil)
	cb := NewCallback(t)
	s, err := connect(t, rs, newDCRHandler(t, cb, Browse))
	require.NoError(t, err)
	first := as.Stats()
	require.Equal(t, 1, first.Authorizations)

	before := call(t, s, ToolWhoAmI)
	after := call(t, s, ToolWhoAmI)
	assert.Equal(t, before, after, "same client, scopes and resource")

	got := as.Stats()
	assert.GreaterOrEqual(t, got.Refreshes-first.Refreshes, 2, "a refresh per call")
	assert.Equal(t, 0, got.RefreshesRejected)
	assert.Equal(t, 1, got.Authorizations, "no browser")
	assert.Equal(t, 1, rs.Stats().Unauthorized, "only the first request went without a token")
}

// With a lifetime that short and no refresh token, the login itself fails:
// right after the code exchange the handler asks its token source for the
// token, which finds it expired and cannot refresh.
func TestGoSDKShortLifetimeWithoutRefreshToken(t *testing.T) {
	as := NewAuthServer(t, &AuthServerOptions{AccessTokenLifetime: 5 * time.Second})
	rs := NewResourceServer(t, as, nil)
	cb := NewCallback(t)
	h := newDCRHandler(t, cb, Browse, func(cfg *auth.AuthorizationCodeHandlerConfig) {
		cfg.DynamicClientRegistrationConfig.Metadata.GrantTypes = []string{"authorization_code"}
	})
	_, err := connect(t, rs, h)
	require.ErrorContains(t, err, "refresh token is not set")
	assert.Equal(t, 1, as.Stats().CodeExchanges)
}

// The admin tool answers 403 insufficient_scope; the handler logs in again
// for the union of what it had and what the challenge names, and the call
// goes through.
func TestGoSDKStepUp(t *testing.T) {
	as := NewAuthServer(t, nil)
	rs := NewResourceServer(t, as, nil)
	cb := NewCallback(t)
	s, err := connect(t, rs, newDCRHandler(t, cb, Browse))
	require.NoError(t, err)
	assert.Equal(t, []string{ScopeTools, ScopeOfflineAccess}, call(t, s, ToolWhoAmI).Scopes)

	admin := call(t, s, ToolAdmin)
	assert.ElementsMatch(t, []string{ScopeTools, ScopeAdmin, ScopeOfflineAccess}, admin.Scopes)
	assert.Equal(t, 1, rs.Stats().InsufficientScope)
	assert.Equal(t, 2, as.Stats().Authorizations, "the browser again, for more scopes")

	call(t, s, ToolAdmin)
	assert.Equal(t, 2, as.Stats().Authorizations, "the new token has the scope")
	assert.Equal(t, 1, rs.Stats().InsufficientScope)
}

// A revoked refresh token is refused with invalid_grant; the handler then
// sends the request without a token, meets a 401, and logs in again.
func TestGoSDKRevokedRefreshToken(t *testing.T) {
	as := NewAuthServer(t, &AuthServerOptions{AccessTokenLifetime: 5 * time.Second})
	rs := NewResourceServer(t, as, nil)
	cb := NewCallback(t)
	s, err := connect(t, rs, newDCRHandler(t, cb, Browse))
	require.NoError(t, err)
	first := call(t, s, ToolWhoAmI)

	require.Equal(t, 1, as.RevokeClient(first.ClientID))
	second := call(t, s, ToolWhoAmI)

	got := as.Stats()
	assert.Equal(t, 1, got.RefreshesRejected, "the revoked refresh token")
	assert.Equal(t, 2, got.Authorizations, "a new login")
	assert.Equal(t, 2, got.Registrations, "the handler registers again on every login")
	assert.NotEqual(t, first.ClientID, second.ClientID)
	assert.Equal(t, 2, rs.Stats().Unauthorized)
}

// When the resource server, not the clock, says the access token is over,
// the handler does not try its refresh token: it logs in again.
func TestGoSDKServerSideExpiry(t *testing.T) {
	as := NewAuthServer(t, nil)
	rs := NewResourceServer(t, as, nil)
	cb := NewCallback(t)
	s, err := connect(t, rs, newDCRHandler(t, cb, Browse))
	require.NoError(t, err)
	call(t, s, ToolWhoAmI)

	as.ExpireAccessTokens()
	call(t, s, ToolWhoAmI)
	got := as.Stats()
	assert.Equal(t, 2, got.Authorizations)
	assert.Equal(t, 0, got.Refreshes)
	assert.Equal(t, 2, rs.Stats().Unauthorized)
}

// The handler checks the iss of the redirect against the metadata, and
// redeems no code when it does not match.
func TestGoSDKIssuerCheck(t *testing.T) {
	tests := []struct {
		name         string
		iss          IssBehavior
		unadvertised bool
		acceptUnadv  bool
		wantErr      string // "" for a login
	}{
		{"correct", IssCorrect, false, false, ""},
		{"wrong", IssWrong, false, false, "does not match expected issuer"},
		{"omitted", IssOmitted, false, false, "none was received"},
		{"unadvertised", IssCorrect, true, false, "does not advertise"},
		{"unadvertised accepted", IssCorrect, true, true, ""},
		{"unadvertised and omitted", IssOmitted, true, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := NewAuthServer(t, &AuthServerOptions{UnadvertisedIss: tt.unadvertised})
			as.SetIssBehavior(tt.iss)
			rs := NewResourceServer(t, as, nil)
			cb := NewCallback(t)
			h := newDCRHandler(t, cb, Browse, func(cfg *auth.AuthorizationCodeHandlerConfig) {
				cfg.AcceptUnadvertisedIss = tt.acceptUnadv
			})
			_, err := connect(t, rs, h)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, 1, as.Stats().Authorizations)
				assert.Equal(t, 1, as.Stats().CodeExchanges)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			assert.Equal(t, 2, as.Stats().Authorizations, "one login for server/discover, one for the initialize it falls back to")
			assert.Equal(t, 0, as.Stats().CodeExchanges, "the code must not be redeemed")
		})
	}
}

// When the resource server moves to another authorization server (here one
// with an issuer path, found by path insertion), the old token is refused
// and the handler logs in at the new one.
func TestGoSDKChangedAuthServer(t *testing.T) {
	old := NewAuthServer(t, nil)
	rs := NewResourceServer(t, old, nil)
	cb := NewCallback(t)
	s, err := connect(t, rs, newDCRHandler(t, cb, Browse))
	require.NoError(t, err)
	assert.Equal(t, old.Issuer(), call(t, s, ToolWhoAmI).Issuer)

	moved := NewAuthServer(t, &AuthServerOptions{IssuerPath: "/tenant"})
	rs.SetAuthServer(moved)
	assert.Equal(t, []string{moved.Issuer()}, rs.Metadata().AuthorizationServers)
	id := call(t, s, ToolWhoAmI)
	assert.Equal(t, moved.Issuer(), id.Issuer)
	assert.Equal(t, []string{id.ClientID}, moved.Clients())
	assert.Equal(t, 1, moved.Stats().Authorizations)
	assert.Equal(t, 1, old.Stats().Authorizations)
}

// A confidential client registered ahead of time, with a redirect URI
// without a port, logs in from a listener on whatever port it got, and
// authenticates with client_secret_post (which the handler prefers).
func TestGoSDKPreregisteredClient(t *testing.T) {
	as := NewAuthServer(t, &AuthServerOptions{DisableRegistration: true})
	rs := NewResourceServer(t, as, nil)
	cb := NewCallback(t)
	require.NoError(t, as.RegisterClient(Client{
		ID:           "mcpvisor",
		Secret:       "s3cret",
		RedirectURIs: []string{"http://127.0.0.1/callback"},
	}))
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: &oauthex.ClientCredentials{
			ClientID:         "mcpvisor",
			ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: "s3cret"},
			Issuer:           as.Issuer(),
		},
		RedirectURL:              cb.URL(),
		AuthorizationCodeFetcher: cb.Fetcher(Browse),
	})
	require.NoError(t, err)
	s, err := connect(t, rs, h)
	require.NoError(t, err)
	assert.Equal(t, "mcpvisor", call(t, s, ToolWhoAmI).ClientID)
	assert.Equal(t, 0, as.Stats().Registrations)
}

// A user who refuses consent ends the login with access_denied, which
// reaches the caller of Connect as an *AuthorizationError.
func TestGoSDKConsentDenied(t *testing.T) {
	as := NewAuthServer(t, nil)
	as.SetDenyConsent(true)
	rs := NewResourceServer(t, as, nil)
	cb := NewCallback(t)
	_, err := connect(t, rs, newDCRHandler(t, cb, Browse))
	var ae *AuthorizationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "access_denied", ae.Code)
	assert.Equal(t, 0, as.Stats().CodeExchanges)
	// Connect asks the user twice: once for server/discover, once more for
	// the initialize it falls back to when discover fails.
	assert.Equal(t, 2, as.Stats().Denials)
}

// A handler with a client ID metadata document uses it where the server
// supports them, before registration; elsewhere it registers. An
// unpublished document is an error page: no redirect to an unknown client.
func TestGoSDKClientIDMetadataDocument(t *testing.T) {
	const docURL = "https://mcpvisor.example/oauth/client.json" // never fetched
	tests := []struct {
		name       string
		supported  bool
		publish    bool
		wantClient string // "" for a registered one
		wantErr    bool
	}{
		{"used", true, true, docURL, false},
		{"unsupported, registers", false, true, "", false},
		{"unpublished", true, false, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := NewAuthServer(t, &AuthServerOptions{ClientIDMetadataDocuments: tt.supported})
			rs := NewResourceServer(t, as, nil)
			cb := NewCallback(t)
			if tt.publish {
				as.PublishClientMetadata(docURL, oauthex.ClientRegistrationMetadata{
					RedirectURIs: []string{cb.URL()},
					GrantTypes:   []string{"authorization_code", "refresh_token"},
				})
			}
			h := newDCRHandler(t, cb, Browse, func(cfg *auth.AuthorizationCodeHandlerConfig) {
				cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: docURL}
			})
			s, err := connect(t, rs, h)
			if tt.wantErr {
				var page *PageError
				require.ErrorAs(t, err, &page)
				assert.Contains(t, page.Body, "unknown client_id")
				return
			}
			require.NoError(t, err)
			id := call(t, s, ToolWhoAmI)
			if tt.wantClient != "" {
				assert.Equal(t, tt.wantClient, id.ClientID)
				assert.Equal(t, 0, as.Stats().Registrations)
				assert.Positive(t, as.Stats().ClientDocuments)
				return
			}
			assert.Equal(t, as.Clients(), []string{id.ClientID})
			assert.Equal(t, 1, as.Stats().Registrations)
			assert.Zero(t, as.Stats().ClientDocuments)
		})
	}
}
