package oauth

import (
	"fmt"
	"net/url"
	"slices"
)

// Config is how a server's client identifies itself to the authorization
// server. Every field is optional; the zero value discovers everything and
// registers the client dynamically.
type Config struct {
	// ClientID and ClientSecret are credentials registered ahead of time.
	// When ClientID is set they win over a client ID metadata document
	// and dynamic registration. ClientSecret is empty for a public client.
	ClientID     string
	ClientSecret string
	// Scopes are asked for at login instead of those the server's
	// metadata names. Scopes the server asks for later (step-up) are added.
	Scopes []string
	// RedirectPort fixes the loopback port of the redirect, for an
	// authorization server that registered one exact redirect URI. If
	// zero, any free port.
	RedirectPort int
	// ClientMetadataURL is the https URL of a client ID metadata document
	// that serves as the client's ID where the authorization server
	// accepts it.
	ClientMetadataURL string
}

// Problems lists what is wrong with c as "auth.field: message".
func (c Config) Problems() []string {
	var p []string
	if c.ClientSecret != "" && c.ClientID == "" {
		p = append(p, "auth.client_secret: needs auth.client_id (a secret belongs to a pre-registered client)")
	}
	if c.RedirectPort < 0 || c.RedirectPort > 65535 {
		p = append(p, fmt.Sprintf("auth.redirect_port: must be a port number (1-65535), got %d", c.RedirectPort))
	}
	if c.ClientMetadataURL != "" {
		u, err := url.Parse(c.ClientMetadataURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.Path == "" || u.Path == "/" {
			p = append(p, fmt.Sprintf("auth.client_metadata_url: must be an https URL with a path, like https://example.com/client.json, got %q", c.ClientMetadataURL))
		}
	}
	for i, s := range c.Scopes {
		if s == "" || slices.Contains([]rune(s), ' ') {
			p = append(p, fmt.Sprintf("auth.scopes[%d]: must be one scope without spaces, got %q", i+1, s))
		}
	}
	return p
}
