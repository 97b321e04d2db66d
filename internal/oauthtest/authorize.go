package oauthtest

import (
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// codeLifetime is how long an authorization code can be redeemed.
const codeLifetime = time.Minute

// handleAuthorize is the authorization endpoint. Consent is automatic: a
// valid request is answered at once with a redirect carrying a code, as if a
// logged-in user had clicked "Allow".
//
// Errors come back in two ways (RFC 6749 section 4.1.2.1). While the client
// or its redirect URI is in doubt the server must not redirect, or it would
// be an open redirector, so it shows an error page (400). Once both are
// known, every other error is a redirect with error, error_description,
// state and iss.
func (s *AuthServer) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	redirect, page := s.authorizeLocked(r.URL.Query())
	s.mu.Unlock()
	if page != "" {
		http.Error(w, page, http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, redirect, http.StatusFound)
}

// authorizeLocked decides the answer to an authorization request: a
// redirect back to the client, or, if the request cannot be trusted with
// one, the text of an error page.
func (s *AuthServer) authorizeLocked(q url.Values) (redirect, page string) {
	clientID, redirectURI, state := q.Get("client_id"), q.Get("redirect_uri"), q.Get("state")
	c, ok := s.clientLocked(clientID)
	if !ok {
		return "", "unknown client_id " + strconv.Quote(clientID)
	}
	if !redirectAllowed(c.RedirectURIs, redirectURI) {
		return "", "redirect_uri " + strconv.Quote(redirectURI) + " is not registered for this client"
	}

	fail := func(code, description string) (string, string) {
		return s.redirectLocked(redirectURI, url.Values{
			"error":             {code},
			"error_description": {description},
			"state":             {state},
		}), ""
	}
	if q.Get("response_type") != "code" {
		return fail("unsupported_response_type", "only response_type=code is supported")
	}
	if !slices.Contains(c.GrantTypes, "authorization_code") {
		return fail("unauthorized_client", "the client may not use the authorization code grant")
	}
	challenge := q.Get("code_challenge")
	if challenge == "" || q.Get("code_challenge_method") != "S256" {
		return fail("invalid_request", "PKCE with code_challenge_method=S256 is required")
	}
	scopes := scopeSet(q.Get("scope"))
	for _, sc := range scopes {
		if !slices.Contains(s.scopes, sc) {
			return fail("invalid_scope", "unknown scope "+strconv.Quote(sc))
		}
	}
	resource := q.Get("resource")
	if !s.resources[resource] {
		return fail("invalid_target", "unknown resource "+strconv.Quote(resource))
	}
	if s.deny {
		s.stats.Denials++
		return fail("access_denied", "the user refused")
	}

	scopes = slices.DeleteFunc(scopes, func(sc string) bool { return slices.Contains(s.withheld, sc) })
	code := newToken("code")
	s.codes[code] = &authCode{
		client:      clientID,
		redirectURI: redirectURI,
		challenge:   challenge,
		scopes:      scopes,
		resource:    resource,
		expiry:      time.Now().Add(codeLifetime),
	}
	s.stats.Authorizations++
	return s.redirectLocked(redirectURI, url.Values{"code": {code}, "state": {state}}), ""
}

// redirectLocked adds params and the iss parameter (RFC 9207) to the
// client's redirect URI, keeping the query it already has.
func (s *AuthServer) redirectLocked(redirectURI string, params url.Values) string {
	switch s.iss {
	case IssCorrect:
		params.Set("iss", s.issuerLocked())
	case IssWrong:
		params.Set("iss", s.srv.URL+"/someone-else")
	case IssOmitted:
	}
	u, _ := url.Parse(redirectURI) // redirectAllowed parsed it already
	q := u.Query()
	for k, vs := range params {
		q[k] = vs
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// redirectAllowed reports whether uri is one of the registered redirect
// URIs. A native app listening on a loopback IP address gets whatever port
// is free when it starts, so for those the port does not count (RFC 8252
// section 7.3); everything else must match exactly.
func redirectAllowed(registered []string, uri string) bool {
	if uri == "" {
		return false // OAuth 2.1 makes redirect_uri required
	}
	got, err := url.Parse(uri)
	if err != nil || got.Fragment != "" {
		return false
	}
	for _, reg := range registered {
		if reg == uri {
			return true
		}
		want, err := url.Parse(reg)
		if err != nil || !isLoopbackIP(want.Hostname()) {
			continue
		}
		if got.Scheme == want.Scheme && got.Hostname() == want.Hostname() &&
			got.EscapedPath() == want.EscapedPath() && got.RawQuery == want.RawQuery {
			return true
		}
	}
	return false
}

// isLoopbackIP reports whether host is a loopback IP literal. "localhost"
// is not one: RFC 8252 section 8.3 advises against it, since it may resolve
// elsewhere.
func isLoopbackIP(host string) bool {
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// redirectURIAcceptable reports whether a client may register uri: https
// anywhere, plain http only on a loopback IP address, or a private-use
// scheme such as com.example.app:/cb (RFC 8252 section 7.1).
func redirectURIAcceptable(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil || !u.IsAbs() || u.Fragment != "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return u.Host != ""
	case "http":
		return isLoopbackIP(u.Hostname())
	case "javascript", "data", "vbscript", "file":
		return false
	}
	return true
}

func joinScopes(scopes []string) string { return strings.Join(scopes, " ") }

// scopeSet splits a scope parameter into sorted, distinct scopes. Order
// means nothing in a scope parameter, and the go-sdk client sends its
// scopes in map order, which differs from run to run.
func scopeSet(scope string) []string {
	s := strings.Fields(scope)
	slices.Sort(s)
	return slices.Compact(s)
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
