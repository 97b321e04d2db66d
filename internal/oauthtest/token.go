package oauthtest

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// handleToken is the token endpoint: the authorization_code and
// refresh_token grants.
func (s *AuthServer) handleToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthFailure(http.StatusBadRequest, "invalid_request", err.Error()).write(w)
		return
	}
	s.mu.Lock()
	rep := s.tokenLocked(r)
	s.mu.Unlock()
	rep.write(w)
}

func (s *AuthServer) tokenLocked(r *http.Request) reply {
	c, fail := s.authenticateLocked(r)
	if c == nil {
		if r.PostForm.Get("grant_type") == "refresh_token" {
			s.stats.RefreshesRejected++
		}
		return fail
	}
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "authorization_code":
		return s.exchangeCodeLocked(r.PostForm, c)
	case "refresh_token":
		return s.refreshLocked(r.PostForm, c)
	default:
		return oauthFailure(http.StatusBadRequest, "unsupported_grant_type", "unsupported grant_type "+gt)
	}
}

// exchangeCodeLocked redeems an authorization code. The request must come
// from the client the code was for, name the same redirect URI, carry the
// PKCE verifier whose S256 hash is the challenge, and, if it names a
// resource, the same one.
func (s *AuthServer) exchangeCodeLocked(f url.Values, c *Client) reply {
	code, ok := s.codes[f.Get("code")]
	switch {
	case !ok || code.client != c.ID:
		return invalidGrant("unknown authorization code")
	case code.redeemed != nil:
		s.revokeLocked(code.redeemed)
		return invalidGrant("authorization code used twice; its tokens are revoked")
	case !time.Now().Before(code.expiry):
		return invalidGrant("authorization code expired")
	case f.Get("redirect_uri") != code.redirectURI:
		return invalidGrant("redirect_uri differs from the authorization request")
	case !pkceMatches(f.Get("code_verifier"), code.challenge):
		return invalidGrant("PKCE verification failed")
	case f.Has("resource") && f.Get("resource") != code.resource:
		return oauthFailure(http.StatusBadRequest, "invalid_target", "resource differs from the authorization request")
	}
	g := &grant{client: c.ID, scopes: code.scopes, resource: code.resource, issuer: s.issuerLocked()}
	code.redeemed = g
	s.grants = append(s.grants, g)
	s.stats.CodeExchanges++
	return reply{status: http.StatusOK, body: s.issueLocked(g, g.scopes)}
}

// refreshLocked answers a refresh_token grant, and counts it.
func (s *AuthServer) refreshLocked(f url.Values, c *Client) reply {
	rep := s.rotateLocked(f, c)
	if rep.status == http.StatusOK {
		s.stats.Refreshes++
	} else {
		s.stats.RefreshesRejected++
	}
	return rep
}

// rotateLocked trades a refresh token for a new access token and a new
// refresh token, and retires the old one. golang.org/x/oauth2 sends neither
// scope nor resource when it refreshes, so both default to the grant's.
func (s *AuthServer) rotateLocked(f url.Values, c *Client) reply {
	rt, ok := s.refresh[f.Get("refresh_token")]
	switch {
	case !ok || rt.grant.client != c.ID:
		return invalidGrant("unknown refresh token")
	case rt.grant.revoked:
		return invalidGrant("refresh token revoked")
	case rt.retired:
		s.revokeLocked(rt.grant)
		return invalidGrant("refresh token already used; the grant is revoked")
	case !c.mayRefresh():
		return oauthFailure(http.StatusBadRequest, "unauthorized_client", "the client may not use refresh tokens")
	case f.Has("resource") && f.Get("resource") != rt.grant.resource:
		return oauthFailure(http.StatusBadRequest, "invalid_target", "resource differs from the original grant")
	}
	scopes := rt.grant.scopes
	if f.Has("scope") {
		scopes = scopeSet(f.Get("scope"))
		if !subset(scopes, rt.grant.scopes) {
			return oauthFailure(http.StatusBadRequest, "invalid_scope", "a refresh cannot widen the grant")
		}
	}
	rt.retired = true
	return reply{status: http.StatusOK, body: s.issueLocked(rt.grant, scopes)}
}

// handleRevoke is the revocation endpoint (RFC 7009). Revoking either kind
// of token revokes its whole grant. An unknown token, or another client's,
// is not an error: the answer is 200 either way, so it tells nothing.
func (s *AuthServer) handleRevoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthFailure(http.StatusBadRequest, "invalid_request", err.Error()).write(w)
		return
	}
	s.mu.Lock()
	c, rep := s.authenticateLocked(r)
	if c != nil {
		if g := s.grantOfLocked(r.PostForm.Get("token")); g != nil && g.client == c.ID {
			s.revokeLocked(g)
		}
		rep = reply{status: http.StatusOK}
	}
	s.mu.Unlock()
	rep.write(w)
}

// authenticateLocked finds the client a token or revocation request is
// from. A confidential client proves itself with its secret, either in an
// HTTP Basic header (client_secret_basic, whose parts are form-encoded:
// RFC 6749 section 2.3.1) or in the form (client_secret_post); a public
// client just names itself in client_id. If it finds none, it returns the
// failure to answer.
func (s *AuthServer) authenticateLocked(r *http.Request) (*Client, reply) {
	f := r.PostForm
	id, secret, basic := r.BasicAuth()
	refused := oauthFailure(http.StatusUnauthorized, "invalid_client", "client authentication failed")
	if basic {
		refused.basicChallenge = true
		if f.Has("client_secret") {
			return nil, oauthFailure(http.StatusBadRequest, "invalid_request", "more than one client authentication method")
		}
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil || (f.Has("client_id") && f.Get("client_id") != id) {
			return nil, refused
		}
	} else {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	c, ok := s.clientLocked(id)
	switch {
	case !ok:
	case c.Secret == "" && secret == "" && !basic:
		return c, reply{}
	case c.Secret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) == 1:
		return c, reply{}
	}
	return nil, refused
}

// pkceMatches reports whether verifier hashes to challenge under S256 (RFC
// 7636 section 4.6): BASE64URL(SHA256(verifier)), without padding. The
// verifier must be 43 to 128 unreserved characters.
func pkceMatches(verifier, challenge string) bool {
	if len(verifier) < 43 || len(verifier) > 128 || strings.ContainsFunc(verifier, notUnreserved) {
		return false
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

func notUnreserved(r rune) bool {
	return !('A' <= r && r <= 'Z' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9' ||
		slices.Contains([]rune("-._~"), r))
}
