package oauthtest

import (
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Why a token is refused. Each wraps auth.ErrInvalidToken, so a verifier
// that returns them makes auth.RequireBearerToken answer 401.
var (
	ErrTokenUnknown = fmt.Errorf("%w: unknown token", auth.ErrInvalidToken)
	ErrTokenExpired = fmt.Errorf("%w: token expired", auth.ErrInvalidToken)
	ErrTokenRevoked = fmt.Errorf("%w: token revoked", auth.ErrInvalidToken)
)

// Client is a client registered with an [AuthServer], ahead of time with
// [AuthServer.RegisterClient] or by the client itself at /register.
type Client struct {
	ID string
	// Secret makes the client confidential: it must authenticate at the token
	// endpoint with client_secret_basic or client_secret_post. If empty, the
	// client is public (token_endpoint_auth_method "none") and PKCE is all
	// that binds the code to it.
	Secret string
	// RedirectURIs are matched exactly, except that a loopback IP address
	// (127.0.0.1 or [::1]) matches on any port, as RFC 8252 section 7.3
	// asks.
	RedirectURIs []string
	// GrantTypes the client may use. If nil, authorization_code and
	// refresh_token.
	GrantTypes []string
}

func (c *Client) mayRefresh() bool { return slices.Contains(c.GrantTypes, "refresh_token") }

// A grant is one consent: a client may act for the user on one resource
// with some scopes. Every token descends from a grant, and revoking the grant
// ends them all.
type grant struct {
	client   string
	scopes   []string
	resource string
	issuer   string
	revoked  bool
}

// authCode is an authorization code from /authorize, good once, for a
// minute.
type authCode struct {
	client      string
	redirectURI string
	challenge   string // PKCE S256 code challenge
	scopes      []string
	resource    string
	expiry      time.Time
	// redeemed is the grant the code was exchanged for. A code presented a
	// second time revokes it (RFC 6749 section 4.1.2).
	redeemed *grant
}

type accessToken struct {
	grant  *grant
	scopes []string // the grant's, or fewer if a refresh asked for fewer
	expiry time.Time
}

// refreshToken rotates: each use hands out a new one and retires the old.
// A retired token that comes back has been stolen or replayed, so the whole
// grant is revoked (OAuth 2.1 section 4.3.1).
type refreshToken struct {
	grant   *grant
	retired bool
}

// AccessToken is what [AuthServer.Verify] knows about a valid access token.
type AccessToken struct {
	ClientID string
	Subject  string
	Issuer   string    // the issuer at the time of the login
	Resource string    // the RFC 8707 resource indicator it is for
	Scopes   []string  // granted scopes, sorted
	Expiry   time.Time // when it stops being good
}

// newToken returns an unguessable token with a prefix that says what it is,
// which helps when reading logs.
func newToken(prefix string) string { return prefix + "_" + rand.Text() }

// RegisterClient adds a client ahead of time, as an administrator would.
func (s *AuthServer) RegisterClient(c Client) error {
	if c.ID == "" {
		return errors.New("oauthtest: RegisterClient: empty client ID")
	}
	if len(c.RedirectURIs) == 0 {
		return fmt.Errorf("oauthtest: RegisterClient %q: no redirect URIs", c.ID)
	}
	rec := &Client{
		ID:           c.ID,
		Secret:       c.Secret,
		RedirectURIs: slices.Clone(c.RedirectURIs),
		GrantTypes:   slices.Clone(c.GrantTypes),
	}
	if rec.GrantTypes == nil {
		rec.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[c.ID]; ok {
		return fmt.Errorf("oauthtest: RegisterClient %q: already registered", c.ID)
	}
	s.clients[c.ID] = rec
	return nil
}

// ForgetClients forgets every registered client, as an authorization
// server that lost or expired its registrations does: /authorize shows an
// unknown client_id page and /token answers invalid_client for them from
// now on. It returns how many there were.
func (s *AuthServer) ForgetClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.clients)
	clear(s.clients)
	return n
}

// Clients returns the IDs of all registered clients, sorted.
func (s *AuthServer) Clients() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.clients))
	for id := range s.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Verify tells whether an access token is good now, and what it grants. Its
// errors are [ErrTokenUnknown], [ErrTokenExpired] and [ErrTokenRevoked].
func (s *AuthServer) Verify(token string) (AccessToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.access[token]
	switch {
	case !ok:
		return AccessToken{}, ErrTokenUnknown
	case at.grant.revoked:
		return AccessToken{}, ErrTokenRevoked
	case !time.Now().Before(at.expiry):
		return AccessToken{}, ErrTokenExpired
	}
	return AccessToken{
		ClientID: at.grant.client,
		Subject:  s.subject,
		Issuer:   at.grant.issuer,
		Resource: at.grant.resource,
		Scopes:   slices.Clone(at.scopes),
		Expiry:   at.expiry,
	}, nil
}

// Revoke revokes the grant an access or refresh token belongs to, with every
// token of it, as /revoke does. It reports whether the token was known.
func (s *AuthServer) Revoke(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.grantOfLocked(token)
	if g == nil {
		return false
	}
	s.revokeLocked(g)
	return true
}

// RevokeClient revokes every grant of a client and returns how many there
// were. Its refresh tokens are refused from now on; so are its access
// tokens, at the resource server.
func (s *AuthServer) RevokeClient(clientID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, g := range s.grants {
		if g.client == clientID && !g.revoked {
			s.revokeLocked(g)
			n++
		}
	}
	return n
}

// ExpireAccessTokens makes every access token handed out so far expired.
// The client still believes them good until their expires_in runs out, so
// the next request meets a 401: this tests what a client does when the
// resource server, not its clock, says the token is over.
func (s *AuthServer) ExpireAccessTokens() {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, at := range s.access {
		if at.expiry.After(now) {
			at.expiry = now
		}
	}
}

func (s *AuthServer) grantOfLocked(token string) *grant {
	if at, ok := s.access[token]; ok {
		return at.grant
	}
	if rt, ok := s.refresh[token]; ok {
		return rt.grant
	}
	return nil
}

func (s *AuthServer) revokeLocked(g *grant) {
	if !g.revoked {
		g.revoked = true
		s.stats.Revocations++
	}
}

// issueLocked hands out an access token for the grant, and a refresh token
// when the client may refresh. It returns the token response body.
func (s *AuthServer) issueLocked(g *grant, scopes []string) tokenResponse {
	at := newToken("at")
	expiry := time.Now().Add(s.lifetime)
	s.access[at] = &accessToken{grant: g, scopes: scopes, expiry: expiry}
	resp := tokenResponse{
		AccessToken: at,
		TokenType:   "Bearer",
		ExpiresIn:   max(1, int64(s.lifetime.Round(time.Second)/time.Second)),
		Scope:       joinScopes(scopes),
	}
	c, _ := s.clientLocked(g.client)
	if c.mayRefresh() && (!s.requireOffline || slices.Contains(g.scopes, ScopeOfflineAccess)) {
		resp.RefreshToken = newToken("rt")
		s.refresh[resp.RefreshToken] = &refreshToken{grant: g}
	}
	return resp
}

// tokenResponse is a successful token endpoint answer (RFC 6749 section
// 5.1). Scope is always present: the go-sdk client takes it as the set it
// was granted, and asks for that set again plus more when it steps up.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
	Scope        string `json:"scope"`
}
