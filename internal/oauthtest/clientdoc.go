package oauthtest

import (
	"net/url"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// PublishClientMetadata makes md the client ID metadata document at
// clientIDURL, as if it were served there. With
// AuthServerOptions.ClientIDMetadataDocuments set, a client whose client_id
// is clientIDURL is then known without registering: a public client with
// md's redirect URIs and grant types (authorization_code only if md has
// none). A real server fetches the document over https; tests cannot, so
// the fixture looks it up here, on every use, so that publishing again
// changes the client at once.
func (s *AuthServer) PublishClientMetadata(clientIDURL string, md oauthex.ClientRegistrationMetadata) {
	c := &Client{
		ID:           clientIDURL,
		RedirectURIs: slices.Clone(md.RedirectURIs),
		GrantTypes:   slices.Clone(md.GrantTypes),
	}
	if c.GrantTypes == nil {
		c.GrantTypes = []string{"authorization_code"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.documents[clientIDURL] = c
}

// clientLocked finds a client by ID: a registered one, or, with client ID
// metadata documents on, the one whose ID is the URL of a published
// document. Such an ID must be an https URL with a path.
func (s *AuthServer) clientLocked(id string) (*Client, bool) {
	if c, ok := s.clients[id]; ok {
		return c, true
	}
	if !s.clientDocs {
		return nil, false
	}
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" {
		return nil, false
	}
	s.stats.ClientDocuments++
	c, ok := s.documents[id]
	return c, ok
}
