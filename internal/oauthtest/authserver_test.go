package oauthtest

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// newPublicClient registers a public client of as that redirects to a
// loopback address, and allows testResource.
func newPublicClient(t *testing.T, as *AuthServer) Client {
	t.Helper()
	c := Client{ID: "public", RedirectURIs: []string{"http://127.0.0.1:1/callback"}}
	require.NoError(t, as.RegisterClient(c))
	as.AllowResource(testResource)
	return c
}

func httpStatus(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// The metadata answers at the paths the go-sdk client tries for the issuer,
// and nowhere else; moving the issuer moves them.
func TestMetadataPaths(t *testing.T) {
	tests := []struct {
		issuerPath string
		serves     []string
		notFound   []string
	}{
		{
			issuerPath: "",
			serves:     []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"},
			notFound:   []string{"/.well-known/oauth-authorization-server/tenant"},
		},
		{
			issuerPath: "/tenant",
			serves: []string{
				"/.well-known/oauth-authorization-server/tenant",
				"/.well-known/openid-configuration/tenant",
				"/tenant/.well-known/openid-configuration",
			},
			notFound: []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"},
		},
	}
	for _, tt := range tests {
		t.Run("issuer path "+tt.issuerPath, func(t *testing.T) {
			as := NewAuthServer(t, &AuthServerOptions{IssuerPath: tt.issuerPath})
			require.Equal(t, as.URL()+tt.issuerPath, as.Issuer())
			for _, p := range tt.serves {
				asm, err := oauthex.GetAuthServerMeta(testContext(t), as.URL()+p, as.Issuer(), nil)
				require.NoError(t, err, p)
				require.NotNil(t, asm, p)
				assert.Equal(t, as.Issuer(), asm.Issuer)
				assert.Equal(t, as.Issuer()+"/token", asm.TokenEndpoint)
				assert.Equal(t, []string{"S256"}, asm.CodeChallengeMethodsSupported)
				assert.True(t, asm.AuthorizationResponseIssParameterSupported)
			}
			for _, p := range tt.notFound {
				assert.Equal(t, http.StatusNotFound, httpStatus(t, as.URL()+p), p)
			}
			// What the go-sdk client does: the first path that answers.
			asm, err := auth.GetAuthServerMetadata(testContext(t), as.Issuer(), nil)
			require.NoError(t, err)
			require.NotNil(t, asm)
			assert.Equal(t, len(tt.serves)+1, as.Stats().MetadataFetches)
		})
	}

	t.Run("SetIssuerPath", func(t *testing.T) {
		as := NewAuthServer(t, nil)
		as.SetIssuerPath("/moved")
		assert.Equal(t, http.StatusNotFound, httpStatus(t, as.URL()+"/.well-known/oauth-authorization-server"))
		assert.Equal(t, http.StatusNotFound, httpStatus(t, as.URL()+"/authorize"))
		asm, err := auth.GetAuthServerMetadata(testContext(t), as.URL()+"/moved", nil)
		require.NoError(t, err)
		require.NotNil(t, asm)
		assert.Equal(t, as.URL()+"/moved/authorize", asm.AuthorizationEndpoint)
	})

	t.Run("UnadvertisedIss", func(t *testing.T) {
		as := NewAuthServer(t, &AuthServerOptions{UnadvertisedIss: true})
		assert.False(t, as.Metadata().AuthorizationResponseIssParameterSupported)
	})
}

// Dynamic registration hands out a public client for "none" and a secret
// otherwise, refuses what it cannot honour, and can be turned off.
func TestRegistration(t *testing.T) {
	as := NewAuthServer(t, nil)
	endpoint := as.Metadata().RegistrationEndpoint
	require.Equal(t, as.Issuer()+"/register", endpoint)

	register := func(md oauthex.ClientRegistrationMetadata) (*oauthex.ClientRegistrationResponse, error) {
		return oauthex.RegisterClient(testContext(t), endpoint, &md, nil)
	}
	loopback := []string{"http://127.0.0.1:8000/callback"}

	public, err := register(oauthex.ClientRegistrationMetadata{RedirectURIs: loopback, TokenEndpointAuthMethod: "none"})
	require.NoError(t, err)
	assert.NotEmpty(t, public.ClientID)
	assert.Empty(t, public.ClientSecret)
	assert.Equal(t, []string{"authorization_code"}, public.GrantTypes, "RFC 7591 default")

	confidential, err := register(oauthex.ClientRegistrationMetadata{RedirectURIs: loopback})
	require.NoError(t, err)
	assert.NotEmpty(t, confidential.ClientSecret)
	assert.Equal(t, "client_secret_basic", confidential.TokenEndpointAuthMethod, "RFC 7591 default")

	assert.Equal(t, 2, as.Stats().Registrations)
	assert.ElementsMatch(t, []string{public.ClientID, confidential.ClientID}, as.Clients())

	refused := []struct {
		name string
		md   oauthex.ClientRegistrationMetadata
		code string
	}{
		{"no redirect URI", oauthex.ClientRegistrationMetadata{}, "invalid_redirect_uri"},
		{"plain http off loopback", oauthex.ClientRegistrationMetadata{RedirectURIs: []string{"http://example.com/cb"}}, "invalid_redirect_uri"},
		{"grant type", oauthex.ClientRegistrationMetadata{RedirectURIs: loopback, GrantTypes: []string{"client_credentials"}}, "invalid_client_metadata"},
		{"auth method", oauthex.ClientRegistrationMetadata{RedirectURIs: loopback, TokenEndpointAuthMethod: "private_key_jwt"}, "invalid_client_metadata"},
	}
	for _, tt := range refused {
		_, err := register(tt.md)
		var re *oauthex.ClientRegistrationError
		require.ErrorAs(t, err, &re, tt.name)
		assert.Equal(t, tt.code, re.ErrorCode, tt.name)
	}
	assert.Equal(t, 2, as.Stats().Registrations, "refusals are not registrations")

	as.SetRegistration(false)
	assert.Empty(t, as.Metadata().RegistrationEndpoint)
	_, err = register(oauthex.ClientRegistrationMetadata{RedirectURIs: loopback})
	require.Error(t, err)
	assert.Equal(t, 2, as.Stats().Registrations)
}

// The authorization endpoint shows a page when it cannot trust the client or
// the redirect URI, redirects with an error for anything else that is
// wrong, and redirects with code, state and iss when all is right.
func TestAuthorize(t *testing.T) {
	as := NewAuthServer(t, nil)
	c := newPublicClient(t, as)
	good := func() url.Values {
		return url.Values{
			"response_type":         {"code"},
			"client_id":             {c.ID},
			"redirect_uri":          {"http://127.0.0.1:4321/callback"}, // another port: RFC 8252
			"state":                 {"s1"},
			"scope":                 {ScopeTools + " " + ScopeOfflineAccess},
			"resource":              {testResource},
			"code_challenge":        {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
			"code_challenge_method": {"S256"},
		}
	}
	tests := []struct {
		name      string
		change    func(url.Values)
		wantPage  bool   // an error page, no redirect
		wantError string // the error of the redirect; "" for a code
	}{
		{"ok", func(url.Values) {}, false, ""},
		{"no scope grants none", func(q url.Values) { q.Del("scope") }, false, ""},
		{"unknown client", func(q url.Values) { q.Set("client_id", "nobody") }, true, ""},
		{"no redirect URI", func(q url.Values) { q.Del("redirect_uri") }, true, ""},
		{"other path", func(q url.Values) { q.Set("redirect_uri", "http://127.0.0.1:4321/other") }, true, ""},
		{"other host", func(q url.Values) { q.Set("redirect_uri", "http://localhost:1/callback") }, true, ""},
		{"response type", func(q url.Values) { q.Set("response_type", "token") }, false, "unsupported_response_type"},
		{"no PKCE", func(q url.Values) { q.Del("code_challenge") }, false, "invalid_request"},
		{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, false, "invalid_request"},
		{"unknown scope", func(q url.Values) { q.Set("scope", ScopeTools+" root") }, false, "invalid_scope"},
		{"unknown resource", func(q url.Values) { q.Set("resource", "http://127.0.0.1:9/other") }, false, "invalid_target"},
		{"no resource", func(q url.Values) { q.Del("resource") }, false, "invalid_target"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := good()
			tt.change(q)
			before := as.Stats().Authorizations
			loc, err := Consent(testContext(t), as.Metadata().AuthorizationEndpoint+"?"+q.Encode())
			if tt.wantPage {
				var page *PageError
				require.ErrorAs(t, err, &page)
				assert.Equal(t, http.StatusBadRequest, page.Status)
				return
			}
			require.NoError(t, err)
			u, err := url.Parse(loc)
			require.NoError(t, err)
			assert.Equal(t, q.Get("redirect_uri"), u.Scheme+"://"+u.Host+u.Path)
			got := u.Query()
			assert.Equal(t, "s1", got.Get("state"))
			assert.Equal(t, as.Issuer(), got.Get("iss"))
			assert.Equal(t, tt.wantError, got.Get("error"), got.Get("error_description"))
			if tt.wantError == "" {
				assert.True(t, strings.HasPrefix(got.Get("code"), "code_"), loc)
				assert.Equal(t, before+1, as.Stats().Authorizations)
			} else {
				assert.Empty(t, got.Get("code"))
				assert.Equal(t, before, as.Stats().Authorizations)
			}
		})
	}

	t.Run("deny", func(t *testing.T) {
		as.SetDenyConsent(true)
		defer as.SetDenyConsent(false)
		loc, err := Consent(testContext(t), as.Metadata().AuthorizationEndpoint+"?"+good().Encode())
		require.NoError(t, err)
		u, _ := url.Parse(loc)
		assert.Equal(t, "access_denied", u.Query().Get("error"))
		assert.Equal(t, 1, as.Stats().Denials)
	})
}

// The iss of the redirect is this server's, another's, or missing, as set.
func TestIssBehavior(t *testing.T) {
	as := NewAuthServer(t, nil)
	cfg := oauth2Config(as, newPublicClient(t, as), oauth2.AuthStyleInParams, ScopeTools)
	for _, tt := range []struct {
		b       IssBehavior
		wantIss string // "" for no iss at all
	}{
		{IssCorrect, as.Issuer()},
		{IssWrong, as.URL() + "/someone-else"},
		{IssOmitted, ""},
	} {
		t.Run(tt.b.String(), func(t *testing.T) {
			as.SetIssBehavior(tt.b)
			q, _ := authorize(t, cfg, testResource)
			assert.Equal(t, tt.wantIss, q.Get("iss"))
			assert.Equal(t, tt.wantIss != "", q.Has("iss"))
			assert.NotEmpty(t, q.Get("code"))
		})
	}
}

// A code is redeemed once, by the client it was for, with the PKCE verifier
// and the same redirect URI and resource; a second try revokes what the
// first got.
func TestCodeExchange(t *testing.T) {
	as := NewAuthServer(t, &AuthServerOptions{AccessTokenLifetime: 10 * time.Minute})
	c := newPublicClient(t, as)
	cfg := oauth2Config(as, c, oauth2.AuthStyleInParams, ScopeTools)

	exchange := func(code string, opts ...oauth2.AuthCodeOption) (*oauth2.Token, error) {
		return cfg.Exchange(testContext(t), code, opts...)
	}
	t.Run("wrong verifier", func(t *testing.T) {
		q, _ := authorize(t, cfg, testResource)
		_, err := exchange(q.Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
		assert.Equal(t, "invalid_grant", oauthErrorCode(t, err))
	})
	t.Run("no verifier", func(t *testing.T) {
		q, _ := authorize(t, cfg, testResource)
		_, err := exchange(q.Get("code"))
		assert.Equal(t, "invalid_grant", oauthErrorCode(t, err))
	})
	t.Run("other resource", func(t *testing.T) {
		q, v := authorize(t, cfg, testResource)
		_, err := exchange(q.Get("code"), oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", "http://127.0.0.1:9/other"))
		assert.Equal(t, "invalid_target", oauthErrorCode(t, err))
	})
	t.Run("other redirect URI", func(t *testing.T) {
		q, v := authorize(t, cfg, testResource)
		_, err := exchange(q.Get("code"), oauth2.VerifierOption(v), oauth2.SetAuthURLParam("redirect_uri", "http://127.0.0.1:2/callback"))
		assert.Equal(t, "invalid_grant", oauthErrorCode(t, err))
	})
	t.Run("other client", func(t *testing.T) {
		other := Client{ID: "other", RedirectURIs: c.RedirectURIs}
		require.NoError(t, as.RegisterClient(other))
		q, v := authorize(t, cfg, testResource)
		_, err := oauth2Config(as, other, oauth2.AuthStyleInParams).Exchange(testContext(t), q.Get("code"), oauth2.VerifierOption(v))
		assert.Equal(t, "invalid_grant", oauthErrorCode(t, err))
	})
	t.Run("ok then replayed", func(t *testing.T) {
		before := as.Stats().CodeExchanges
		q, v := authorize(t, cfg, testResource)
		tok, err := exchange(q.Get("code"), oauth2.VerifierOption(v), oauth2.SetAuthURLParam("resource", testResource))
		require.NoError(t, err)
		assert.Equal(t, before+1, as.Stats().CodeExchanges)
		assert.Equal(t, ScopeTools, tok.Extra("scope"))
		assert.WithinDuration(t, time.Now().Add(10*time.Minute), tok.Expiry, 5*time.Second)

		at, err := as.Verify(tok.AccessToken)
		require.NoError(t, err)
		assert.Equal(t, AccessToken{
			ClientID: c.ID, Subject: "test-user", Issuer: as.Issuer(), Resource: testResource,
			Scopes: []string{ScopeTools}, Expiry: at.Expiry,
		}, at)
		assert.WithinDuration(t, tok.Expiry, at.Expiry, 2*time.Second)

		_, err = exchange(q.Get("code"), oauth2.VerifierOption(v))
		assert.Equal(t, "invalid_grant", oauthErrorCode(t, err))
		_, err = as.Verify(tok.AccessToken)
		assert.ErrorIs(t, err, ErrTokenRevoked)
		assert.Equal(t, before+1, as.Stats().CodeExchanges)
	})
}

// Confidential clients authenticate with their secret in the Basic header or
// in the form; public clients name themselves; anything else is
// invalid_client.
func TestClientAuthentication(t *testing.T) {
	as := NewAuthServer(t, nil)
	as.AllowResource(testResource)
	secretive := Client{ID: "app id", Secret: "s3cr:t/+=", RedirectURIs: []string{"http://127.0.0.1:1/cb"}}
	require.NoError(t, as.RegisterClient(secretive))
	public := newPublicClient(t, as)
	assert.Error(t, as.RegisterClient(public), "registered twice")

	tests := []struct {
		name   string
		client Client
		style  oauth2.AuthStyle
		ok     bool
	}{
		{"basic", secretive, oauth2.AuthStyleInHeader, true},
		{"post", secretive, oauth2.AuthStyleInParams, true},
		{"wrong secret basic", Client{ID: secretive.ID, Secret: "nope", RedirectURIs: secretive.RedirectURIs}, oauth2.AuthStyleInHeader, false},
		{"wrong secret post", Client{ID: secretive.ID, Secret: "nope", RedirectURIs: secretive.RedirectURIs}, oauth2.AuthStyleInParams, false},
		{"no secret", Client{ID: secretive.ID, RedirectURIs: secretive.RedirectURIs}, oauth2.AuthStyleInParams, false},
		{"public", public, oauth2.AuthStyleInParams, true},
		{"public with a secret", Client{ID: public.ID, Secret: "x", RedirectURIs: public.RedirectURIs}, oauth2.AuthStyleInParams, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The code is fetched with the real client; only the exchange
			// uses tt.client's credentials.
			real := secretive
			if tt.client.ID == public.ID {
				real = public
			}
			q, v := authorize(t, oauth2Config(as, real, tt.style, ScopeTools), testResource)
			_, err := oauth2Config(as, tt.client, tt.style).Exchange(testContext(t), q.Get("code"), oauth2.VerifierOption(v))
			if tt.ok {
				require.NoError(t, err)
				return
			}
			assert.Equal(t, "invalid_client", oauthErrorCode(t, err))
		})
	}
}

// A refresh hands out a new refresh token and retires the old one; the old
// one coming back revokes the grant.
func TestRefreshRotation(t *testing.T) {
	as := NewAuthServer(t, nil)
	cfg := oauth2Config(as, newPublicClient(t, as), oauth2.AuthStyleInParams, ScopeTools, ScopeOfflineAccess)
	tok := login(t, cfg, testResource)
	require.NotEmpty(t, tok.RefreshToken)

	fresh, err := refresh(t, cfg, tok.RefreshToken)
	require.NoError(t, err)
	assert.NotEqual(t, tok.AccessToken, fresh.AccessToken)
	assert.NotEqual(t, tok.RefreshToken, fresh.RefreshToken, "rotated")
	at, err := as.Verify(fresh.AccessToken)
	require.NoError(t, err)
	assert.Equal(t, testResource, at.Resource, "the resource carries over")
	assert.Equal(t, []string{ScopeTools, ScopeOfflineAccess}, at.Scopes)
	assert.Equal(t, 1, as.Stats().Refreshes)

	_, err = refresh(t, cfg, tok.RefreshToken)
	assert.Equal(t, "invalid_grant", oauthErrorCode(t, err), "a retired refresh token")
	_, err = as.Verify(fresh.AccessToken)
	assert.ErrorIs(t, err, ErrTokenRevoked, "replay revokes the grant")
	_, err = refresh(t, cfg, fresh.RefreshToken)
	assert.Equal(t, "invalid_grant", oauthErrorCode(t, err))

	s := as.Stats()
	assert.Equal(t, 1, s.Refreshes)
	assert.Equal(t, 2, s.RefreshesRejected)
	assert.Equal(t, 1, s.Revocations)
}

// A refresh may narrow the scopes but not widen them.
func TestRefreshScope(t *testing.T) {
	as := NewAuthServer(t, nil)
	cfg := oauth2Config(as, newPublicClient(t, as), oauth2.AuthStyleInParams, ScopeTools, ScopeAdmin)
	tok := login(t, cfg, testResource)

	narrow := *cfg
	narrow.Scopes = []string{ScopeTools}
	r, err := narrow.Exchange(testContext(t), "", oauth2.SetAuthURLParam("grant_type", "refresh_token"),
		oauth2.SetAuthURLParam("refresh_token", tok.RefreshToken), oauth2.SetAuthURLParam("scope", ScopeTools))
	require.NoError(t, err)
	assert.Equal(t, ScopeTools, r.Extra("scope"))

	_, err = narrow.Exchange(testContext(t), "", oauth2.SetAuthURLParam("grant_type", "refresh_token"),
		oauth2.SetAuthURLParam("refresh_token", r.RefreshToken), oauth2.SetAuthURLParam("scope", ScopeTools+" "+ScopeOfflineAccess))
	assert.Equal(t, "invalid_scope", oauthErrorCode(t, err))
}

// Refresh tokens go only to clients allowed the refresh_token grant, and
// with RequireOfflineAccess only to logins granted offline_access.
func TestRefreshTokenPolicy(t *testing.T) {
	tests := []struct {
		name           string
		requireOffline bool
		grantTypes     []string
		scopes         []string
		want           bool
	}{
		{"default", false, nil, []string{ScopeTools}, true},
		{"no refresh grant", false, []string{"authorization_code"}, []string{ScopeTools}, false},
		{"offline required, not asked", true, nil, []string{ScopeTools}, false},
		{"offline required and asked", true, nil, []string{ScopeTools, ScopeOfflineAccess}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := NewAuthServer(t, &AuthServerOptions{RequireOfflineAccess: tt.requireOffline})
			as.AllowResource(testResource)
			c := Client{ID: "c", RedirectURIs: []string{"http://127.0.0.1:1/cb"}, GrantTypes: tt.grantTypes}
			require.NoError(t, as.RegisterClient(c))
			tok := login(t, oauth2Config(as, c, oauth2.AuthStyleInParams, tt.scopes...), testResource)
			assert.Equal(t, tt.want, tok.RefreshToken != "")
		})
	}
}

// Revocation, by /revoke or from Go, ends the grant: its refresh token is
// refused and its access token no longer verifies.
func TestRevoke(t *testing.T) {
	as := NewAuthServer(t, nil)
	c := newPublicClient(t, as)
	cfg := oauth2Config(as, c, oauth2.AuthStyleInParams, ScopeTools)

	t.Run("endpoint", func(t *testing.T) {
		tok := login(t, cfg, testResource)
		resp, err := http.PostForm(as.Metadata().RevocationEndpoint, url.Values{
			"token": {tok.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {c.ID},
		})
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		_, err = as.Verify(tok.AccessToken)
		assert.ErrorIs(t, err, ErrTokenRevoked)
		_, err = refresh(t, cfg, tok.RefreshToken)
		assert.Equal(t, "invalid_grant", oauthErrorCode(t, err))
	})
	t.Run("Revoke", func(t *testing.T) {
		tok := login(t, cfg, testResource)
		assert.True(t, as.Revoke(tok.AccessToken))
		assert.False(t, as.Revoke("at_nonsense"))
		_, err := refresh(t, cfg, tok.RefreshToken)
		assert.Equal(t, "invalid_grant", oauthErrorCode(t, err))
	})
	t.Run("RevokeClient", func(t *testing.T) {
		a, b := login(t, cfg, testResource), login(t, cfg, testResource)
		assert.Equal(t, 2, as.RevokeClient(c.ID))
		for _, tok := range []*oauth2.Token{a, b} {
			_, err := as.Verify(tok.AccessToken)
			assert.ErrorIs(t, err, ErrTokenRevoked)
		}
		assert.Equal(t, 0, as.RevokeClient(c.ID), "already revoked")
	})
}

// Verify tells unknown, expired and revoked tokens apart, and all of them
// are auth.ErrInvalidToken to the go-sdk's bearer middleware.
func TestVerifyErrors(t *testing.T) {
	as := NewAuthServer(t, nil)
	cfg := oauth2Config(as, newPublicClient(t, as), oauth2.AuthStyleInParams, ScopeTools)

	_, err := as.Verify("at_nonsense")
	assert.ErrorIs(t, err, ErrTokenUnknown)
	assert.ErrorIs(t, err, auth.ErrInvalidToken)

	tok := login(t, cfg, testResource)
	as.ExpireAccessTokens()
	_, err = as.Verify(tok.AccessToken)
	assert.ErrorIs(t, err, ErrTokenExpired)
	assert.ErrorIs(t, err, auth.ErrInvalidToken)
	assert.False(t, errors.Is(err, ErrTokenRevoked))

	fresh, err := refresh(t, cfg, tok.RefreshToken)
	require.NoError(t, err, "expiring access tokens leaves refresh tokens alone")
	_, err = as.Verify(fresh.AccessToken)
	assert.NoError(t, err)
}

// A lifetime under a second is still sent as one second: golang.org/x/oauth2
// reads expires_in 0 as a token that never expires.
func TestShortLifetime(t *testing.T) {
	as := NewAuthServer(t, &AuthServerOptions{AccessTokenLifetime: time.Millisecond})
	cfg := oauth2Config(as, newPublicClient(t, as), oauth2.AuthStyleInParams, ScopeTools)
	tok := login(t, cfg, testResource)
	raw, _ := json.Marshal(tok.Extra("expires_in"))
	assert.Equal(t, "1", string(raw))
	assert.False(t, tok.Expiry.IsZero())
}
