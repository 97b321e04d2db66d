package oauth

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpvisor/mcpvisor/internal/endpoint"
)

// This file is what a refusal tries before it needs a person: a login
// made meanwhile (here or by another process), a grant the Store already
// holds for the authorization server the server trusts now, or one that
// already covers the scopes a step-up asks for.

// trustedIssuer asks the server's protected resource metadata which
// authorization server it trusts: the document the challenge names, else
// the well-known one for the path of u. resource is what the document
// must say it is about. ok is false if neither answers with one.
func trustedIssuer(ctx context.Context, client *http.Client, u *url.URL, challenge, resource string) (issuer, gotResource string, ok bool) {
	var candidates []string
	if c := bearer(challenge); c != nil && c.Params["resource_metadata"] != "" {
		candidates = append(candidates, c.Params["resource_metadata"])
	}
	wk := *u
	wk.RawQuery, wk.User = "", nil
	wk.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
	candidates = append(candidates, wk.String())
	for _, mu := range candidates {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, mu, resource, client)
		if err == nil && prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm.AuthorizationServers[0], prm.Resource, true
		}
	}
	return "", "", false
}

// follow answers a 401 for the token of gen (none if access was empty)
// without a person where it can: it picks up a login stored meanwhile,
// and, if the server's metadata names an authorization server other than
// the current grant's, switches to the grant the Store holds for that one
// or, with none, says that a login is needed there. handled is false when
// none of that applies and the caller goes on as before.
func (s *Source) follow(ctx context.Context, gen uint64, u *url.URL, unauthorized *endpoint.UnauthorizedError) (err error, handled bool) {
	s.Reload()
	s.mu.Lock()
	if s.gen != gen {
		s.mu.Unlock()
		return &TokenRefreshedError{Server: s.name}, true
	}
	cur := s.rec.current()
	if cur == nil {
		s.mu.Unlock()
		return nil, false // nothing to compare with: a login finds the issuer
	}
	current, resource := cur.Issuer, cur.Resource
	s.mu.Unlock()
	if resource == "" {
		resource = u.String()
	}
	issuer, _, ok := trustedIssuer(ctx, s.client, u, unauthorized.Challenge, resource)
	if !ok || sameIssuer(issuer, current) {
		return nil, false
	}

	s.mu.Lock()
	if s.gen != gen {
		s.mu.Unlock()
		return &TokenRefreshedError{Server: s.name}, true
	}
	if g := s.rec.grantOf(issuer); g != nil && (g.Token.Access != "" || g.Token.Refresh != "") {
		rec := s.rec.clone()
		rec.Current = issuer
		s.rec = rec
		s.gen++
		s.retried = 0
		s.mu.Unlock()
		_ = s.save(rec)
		return &TokenRefreshedError{Server: s.name, Issuer: issuer}, true
	}
	// The login goes there by itself: it asks the server afresh.
	reason := fmt.Sprintf("the server now trusts authorization server %s, which has not logged this host in", issuer)
	e := s.requireLoginLocked(reason, nil, unauthorized)
	s.mu.Unlock()
	return e, true
}

// covered answers a 403 insufficient_scope for the token of gen without a
// person where it can: when a login stored meanwhile (here or by another
// process) replaced the token, and the grant now in use was given every
// scope asked for, the next request carries it.
func (s *Source) covered(gen uint64, scopes []string) error {
	s.Reload()
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.rec.current()
	if s.gen == gen || g == nil || g.Token.Access == "" && g.Token.Refresh == "" {
		return nil
	}
	if len(scopes) == 0 || !subset(scopes, g.Scopes) {
		return nil
	}
	return &TokenRefreshedError{Server: s.name, Scopes: scopes}
}

// sameIssuer compares issuer identifiers up to a trailing slash, as the
// go-sdk does.
func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

// subset reports whether every one of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
