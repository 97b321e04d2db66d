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
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.authenticateLocked(w, r)
	if !ok {
		if r.PostForm.Get("grant_type") == "refresh_token" {
			s.stats.RefreshesRejected++
		}
		return
	}
	switch gt := r.PostForm.Get("grant_type"); gt {
	case "authorization_code":
		s.exchangeCodeLocked(w, r, c)
	case "refresh_token":
		s.refreshLocked(w, r, c)
	default:
		writeOAuthError(w, http.StatusBadRequest, "unsupported_grant_type", "unsupported grant_type "+gt)
	}
}

// exchangeCodeLocked redeems an authorization code. The request must come
// from the client the code was for, name the same redirect URI, carry the
// PKCE verifier whose S256 hash is the challenge, and, if it names a
// resource, the same one.
func (s *AuthServer) exchangeCodeLocked(w http.ResponseWriter, r *http.Request, c *client) {
	f := r.PostForm
	code, ok := s.codes[f.Get("code")]
	switch {
	case !ok || code.client != c.ID:
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "unknown authorization code")
		return
	case code.redeemed != nil:
		s.revokeLocked(code.redeemed)
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "authorization code used twice; its tokens are revoked")
		return
	case !time.Now().Before(code.expiry):
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "authorization code expired")
		return
	case f.Get("redirect_uri") != code.redirectURI:
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request")
		return
	case !pkceMatches(f.Get("code_verifier"), code.challenge):
		writeOAuthError(w, http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
		return
	case f.Has("resource") && f.Get("resource") != code.resource:
		writeOAuthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request")
		return
	}
	g := &grant{client: c.ID, scopes: code.scopes, resource: code.resource, issuer: s.issuerLocked()}
	code.redeemed = g
	s.grants = append(s.grants, g)
	s.stats.CodeExchanges++
	writeJSON(w, http.StatusOK, s.issueLocked(g, g.scopes))
}

// refreshLocked trades a refresh token for a new access token and a new
// refresh token. golang.org/x/oauth2 sends neither scope nor resource when
// it refreshes, so both default to the grant's.
func (s *AuthServer) refreshLocked(w http.ResponseWriter, r *http.Request, c *client) {
	f := r.PostForm
	reject := func(code, description string) {
		s.stats.RefreshesRejected++
		writeOAuthError(w, http.StatusBadRequest, code, description)
	}
	rt, ok := s.refresh[f.Get("refresh_token")]
	switch {
	case !ok || rt.grant.client != c.ID:
		reject("invalid_grant", "unknown refresh token")
		return
	case rt.grant.revoked:
		reject("invalid_grant", "refresh token revoked")
		return
	case rt.retired:
		s.revokeLocked(rt.grant)
		reject("invalid_grant", "refresh token already used; the grant is revoked")
		return
	case !c.mayRefresh():
		reject("unauthorized_client", "the client may not use refresh tokens")
		return
	case f.Has("resource") && f.Get("resource") != rt.grant.resource:
		reject("invalid_target", "resource differs from the original grant")
		return
	}
	scopes := rt.grant.scopes
	if f.Has("scope") {
		scopes = scopeSet(f.Get("scope"))
		if !subset(scopes, rt.grant.scopes) {
			reject("invalid_scope", "a refresh cannot widen the grant")
			return
		}
	}
	rt.retired = true
	s.stats.Refreshes++
	writeJSON(w, http.StatusOK, s.issueLocked(rt.grant, scopes))
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
		writeOAuthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.authenticateLocked(w, r)
	if !ok {
		return
	}
	if g := s.grantOfLocked(r.PostForm.Get("token")); g != nil && g.client == c.ID {
		s.revokeLocked(g)
	}
	w.WriteHeader(http.StatusOK)
}

// authenticateLocked finds the client a token or revocation request is
// from. A confidential client proves itself with its secret, either in an
// HTTP Basic header (client_secret_basic, whose parts are form-encoded:
// RFC 6749 section 2.3.1) or in the form (client_secret_post); a public
// client just names itself in client_id. On failure it writes the error and
// returns false.
func (s *AuthServer) authenticateLocked(w http.ResponseWriter, r *http.Request) (*client, bool) {
	f := r.PostForm
	id, secret, basic := r.BasicAuth()
	if basic {
		if f.Has("client_secret") {
			writeOAuthError(w, http.StatusBadRequest, "invalid_request", "more than one client authentication method")
			return nil, false
		}
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil || (f.Has("client_id") && f.Get("client_id") != id) {
			s.refuseClient(w, basic)
			return nil, false
		}
	} else {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	c, ok := s.clientLocked(id)
	switch {
	case !ok:
	case c.Secret == "" && secret == "" && !basic:
		return c, true
	case c.Secret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(c.Secret)) == 1:
		return c, true
	}
	s.refuseClient(w, basic)
	return nil, false
}

func (s *AuthServer) refuseClient(w http.ResponseWriter, basic bool) {
	if basic {
		w.Header().Set("WWW-Authenticate", `Basic realm="oauthtest"`)
	}
	writeOAuthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
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
