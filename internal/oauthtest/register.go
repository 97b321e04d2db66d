package oauthtest

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// handleRegister is dynamic client registration (RFC 7591). The client
// chooses how it will authenticate at the token endpoint: "none" makes it
// public, as a native app should be; "client_secret_basic" (the default when
// it says nothing) or "client_secret_post" gets it a secret.
func (s *AuthServer) handleRegister(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var md oauthex.ClientRegistrationMetadata
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&md); err != nil {
		oauthFailure(http.StatusBadRequest, "invalid_client_metadata", "body is not client metadata: "+err.Error()).write(w)
		return
	}
	if code, description := checkRegistration(&md); code != "" {
		oauthFailure(http.StatusBadRequest, code, description).write(w)
		return
	}

	c := &Client{
		ID:           newToken("client"),
		RedirectURIs: md.RedirectURIs,
		GrantTypes:   md.GrantTypes,
	}
	if md.TokenEndpointAuthMethod != "none" {
		c.Secret = newToken("secret")
	}
	s.mu.Lock()
	s.clients[c.ID] = c
	s.stats.Registrations++
	s.mu.Unlock()

	writeJSON(w, http.StatusCreated, &oauthex.ClientRegistrationResponse{
		ClientRegistrationMetadata: md,
		ClientID:                   c.ID,
		ClientSecret:               c.Secret,
		ClientIDIssuedAt:           time.Now(),
	})
}

// checkRegistration fills in the RFC 7591 defaults and returns an error
// code and description if the metadata is not acceptable.
func checkRegistration(md *oauthex.ClientRegistrationMetadata) (code, description string) {
	if len(md.RedirectURIs) == 0 {
		return "invalid_redirect_uri", "redirect_uris is required"
	}
	for _, u := range md.RedirectURIs {
		if !redirectURIAcceptable(u) {
			return "invalid_redirect_uri", "redirect URI " + u + " is neither https, nor http on a loopback IP, nor a private-use scheme"
		}
	}
	if md.TokenEndpointAuthMethod == "" {
		md.TokenEndpointAuthMethod = "client_secret_basic"
	}
	if !slices.Contains([]string{"none", "client_secret_basic", "client_secret_post"}, md.TokenEndpointAuthMethod) {
		return "invalid_client_metadata", "unsupported token_endpoint_auth_method " + md.TokenEndpointAuthMethod
	}
	if md.GrantTypes == nil {
		md.GrantTypes = []string{"authorization_code"}
	}
	if !subset(md.GrantTypes, []string{"authorization_code", "refresh_token"}) {
		return "invalid_client_metadata", "only the authorization_code and refresh_token grant types are supported"
	}
	if md.ResponseTypes == nil {
		md.ResponseTypes = []string{"code"}
	}
	if !subset(md.ResponseTypes, []string{"code"}) {
		return "invalid_client_metadata", "only response type code is supported"
	}
	return "", ""
}
