package oauthtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Scopes the fixture knows by default.
const (
	// ScopeTools is what every call to the [ResourceServer] needs.
	ScopeTools = "mcp:tools"
	// ScopeAdmin is the extra scope the resource server's admin tool needs.
	ScopeAdmin = "mcp:admin"
	// ScopeOfflineAccess asks for a refresh token (OpenID Connect's name,
	// which the go-sdk client adds when RequestRefreshToken is set and the
	// server lists it).
	ScopeOfflineAccess = "offline_access"
)

// AuthServerOptions configures an [AuthServer]. The zero value is a server
// that registers clients dynamically, hands out hour-long access tokens and
// puts the right iss in its redirects.
type AuthServerOptions struct {
	// IssuerPath is the path part of the issuer URL, such as "/tenant". It
	// moves every endpoint under it, and the metadata to the RFC 8414 "path
	// insertion" URLs. If empty, the issuer is the server's origin.
	IssuerPath string

	// Scopes are the scopes the server grants. If nil, [ScopeTools] and
	// [ScopeAdmin]. [ScopeOfflineAccess] is always accepted and listed.
	Scopes []string

	// AccessTokenLifetime is how long an access token is good for. If zero,
	// an hour. It is sent as whole seconds, at least 1: an expires_in of 0
	// reads as "never expires" to golang.org/x/oauth2.
	AccessTokenLifetime time.Duration

	// DisableRegistration turns dynamic client registration off: no
	// registration_endpoint in the metadata, 404 at /register. Only clients
	// added with [AuthServer.RegisterClient] can log in.
	DisableRegistration bool

	// RequireOfflineAccess hands out refresh tokens only to logins that were
	// granted [ScopeOfflineAccess]. Either way a client must also be allowed
	// the refresh_token grant type.
	RequireOfflineAccess bool

	// UnadvertisedIss leaves authorization_response_iss_parameter_supported
	// out of the metadata while redirects still carry iss.
	UnadvertisedIss bool

	// ClientIDMetadataDocuments lets a client use the URL of its metadata
	// document as its client_id, instead of registering. The server finds
	// the documents among those given to [AuthServer.PublishClientMetadata]
	// rather than fetching them.
	ClientIDMetadataDocuments bool

	// Subject is the user every login is for. If empty, "test-user".
	Subject string
}

// IssBehavior says what the iss parameter (RFC 9207) of the redirect back to
// the client carries.
type IssBehavior int

const (
	// IssCorrect puts this server's issuer in the redirect.
	IssCorrect IssBehavior = iota
	// IssWrong puts another issuer in the redirect, as a mix-up attack would.
	IssWrong
	// IssOmitted leaves iss out although the metadata says it is sent.
	IssOmitted
)

func (b IssBehavior) String() string {
	switch b {
	case IssCorrect:
		return "correct"
	case IssWrong:
		return "wrong"
	case IssOmitted:
		return "omitted"
	}
	return "IssBehavior(?)"
}

// Stats counts what an [AuthServer] has done. Failed requests count only
// where a field says so.
type Stats struct {
	MetadataFetches   int // metadata documents served, at any of the well-known paths
	Registrations     int // clients registered through /register
	Authorizations    int // codes handed out by /authorize
	Denials           int // redirects with error=access_denied (see SetDenyConsent)
	CodeExchanges     int // authorization codes redeemed for tokens
	Refreshes         int // refresh_token grants that succeeded
	RefreshesRejected int // refresh_token grants that failed, for any reason
	Revocations       int // grants revoked, by /revoke or the Go API
	ClientDocuments   int // client ID metadata documents looked up
}

// AuthServer is an OAuth 2.1 authorization server on a loopback httptest
// server. Make one with [NewAuthServer].
type AuthServer struct {
	srv *httptest.Server

	// Fixed at construction.
	scopes          []string // what it grants, including offline_access
	lifetime        time.Duration
	subject         string
	requireOffline  bool
	unadvertisedIss bool
	clientDocs      bool

	mu           sync.Mutex // guards the following
	issuerPath   string
	registration bool
	iss          IssBehavior
	deny         bool
	withheld     []string        // scopes the user leaves out of a consent
	resources    map[string]bool // resource indicators it issues tokens for
	clients      map[string]*Client
	documents    map[string]*Client // published client ID metadata documents, by URL
	codes        map[string]*authCode
	access       map[string]*accessToken
	refresh      map[string]*refreshToken
	grants       []*grant
	stats        Stats
}

// NewAuthServer starts an authorization server on 127.0.0.1 and closes it
// when t ends. opts may be nil.
func NewAuthServer(t testing.TB, opts *AuthServerOptions) *AuthServer {
	t.Helper()
	var o AuthServerOptions
	if opts != nil {
		o = *opts
	}
	s := &AuthServer{
		scopes:          []string{ScopeTools, ScopeAdmin},
		lifetime:        o.AccessTokenLifetime,
		subject:         o.Subject,
		requireOffline:  o.RequireOfflineAccess,
		unadvertisedIss: o.UnadvertisedIss,
		clientDocs:      o.ClientIDMetadataDocuments,
		issuerPath:      o.IssuerPath,
		registration:    !o.DisableRegistration,
		resources:       make(map[string]bool),
		clients:         make(map[string]*Client),
		documents:       make(map[string]*Client),
		codes:           make(map[string]*authCode),
		access:          make(map[string]*accessToken),
		refresh:         make(map[string]*refreshToken),
	}
	if o.Scopes != nil {
		s.scopes = slices.Clone(o.Scopes)
	}
	if !slices.Contains(s.scopes, ScopeOfflineAccess) {
		s.scopes = append(s.scopes, ScopeOfflineAccess)
	}
	if s.lifetime == 0 {
		s.lifetime = time.Hour
	}
	if s.subject == "" {
		s.subject = "test-user"
	}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// Close stops the server. It is safe to call more than once.
func (s *AuthServer) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// URL is the server's origin, such as "http://127.0.0.1:41234".
func (s *AuthServer) URL() string { return s.srv.URL }

// Issuer is the issuer identifier: the origin and the issuer path.
func (s *AuthServer) Issuer() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issuerLocked()
}

func (s *AuthServer) issuerLocked() string { return s.srv.URL + s.issuerPath }

// SetIssuerPath moves the server to another issuer on the same origin, as if
// it had been reconfigured: its metadata and endpoints answer only under the
// new path from now on. Tokens already handed out stay good.
func (s *AuthServer) SetIssuerPath(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issuerPath = path
}

// SetRegistration turns dynamic client registration on or off.
func (s *AuthServer) SetRegistration(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.registration = on
}

// SetIssBehavior chooses what the iss parameter of later redirects carries.
func (s *AuthServer) SetIssBehavior(b IssBehavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.iss = b
}

// SetDenyConsent makes the user refuse (true) or grant (false, the default)
// later authorization requests. A refusal is a redirect with
// error=access_denied.
func (s *AuthServer) SetDenyConsent(deny bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deny = deny
}

// SetWithheldScopes makes the user leave the given scopes out of later
// consents (nil: grant all asked for): the authorization code, and so the
// token, carries only the others.
func (s *AuthServer) SetWithheldScopes(scopes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withheld = slices.Clone(scopes)
}

// AllowResource lets clients ask for tokens for the resource (an RFC 8707
// resource indicator: the MCP endpoint's URL). [NewResourceServer] calls it.
func (s *AuthServer) AllowResource(resource string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resources[resource] = true
}

// Stats returns the counts so far.
func (s *AuthServer) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// ServeHTTP routes by the current issuer path, which [AuthServer.SetIssuerPath] can
// change while the server runs.
func (s *AuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	p := s.issuerPath
	registration := s.registration
	s.mu.Unlock()

	switch r.URL.Path {
	case p + "/authorize":
		s.handleAuthorize(w, r)
	case p + "/token":
		s.handleToken(w, r)
	case p + "/revoke":
		s.handleRevoke(w, r)
	case p + "/register":
		if !registration {
			http.NotFound(w, r)
			return
		}
		s.handleRegister(w, r)
	default:
		if slices.Contains(metadataPaths(p), r.URL.Path) {
			s.handleMetadata(w, r)
			return
		}
		http.NotFound(w, r)
	}
}

// metadataPaths are where the metadata of an issuer with the given path is
// served: the paths the go-sdk client tries, in its order. For an issuer
// without a path, RFC 8414's and OpenID Connect's well-known URIs; with one,
// both with the issuer path inserted after the well-known part, then OpenID
// Connect's original form with it appended to the issuer.
func metadataPaths(issuerPath string) []string {
	if issuerPath == "" {
		return []string{
			"/.well-known/oauth-authorization-server",
			"/.well-known/openid-configuration",
		}
	}
	return []string{
		"/.well-known/oauth-authorization-server" + issuerPath,
		"/.well-known/openid-configuration" + issuerPath,
		issuerPath + "/.well-known/openid-configuration",
	}
}

// Metadata is the server's RFC 8414 metadata as it stands.
func (s *AuthServer) Metadata() *oauthex.AuthServerMeta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.metadataLocked()
}

func (s *AuthServer) metadataLocked() *oauthex.AuthServerMeta {
	issuer := s.issuerLocked()
	authMethods := []string{"client_secret_post", "client_secret_basic", "none"}
	m := &oauthex.AuthServerMeta{
		Issuer:                                 issuer,
		AuthorizationEndpoint:                  issuer + "/authorize",
		TokenEndpoint:                          issuer + "/token",
		RevocationEndpoint:                     issuer + "/revoke",
		ScopesSupported:                        slices.Clone(s.scopes),
		ResponseTypesSupported:                 []string{"code"},
		ResponseModesSupported:                 []string{"query"},
		GrantTypesSupported:                    []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported:      authMethods,
		RevocationEndpointAuthMethodsSupported: authMethods,
		// The go-sdk client refuses a server that lists no PKCE method.
		CodeChallengeMethodsSupported:              []string{"S256"},
		AuthorizationResponseIssParameterSupported: !s.unadvertisedIss,
		ClientIDMetadataDocumentSupported:          s.clientDocs,
	}
	if s.registration {
		m.RegistrationEndpoint = issuer + "/register"
	}
	return m
}

func (s *AuthServer) handleMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	s.stats.MetadataFetches++
	m := s.metadataLocked()
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, m)
}

// reply is a JSON answer, worked out under the lock and written after it.
type reply struct {
	status int
	body   any // nil for no body
	// basicChallenge asks for HTTP Basic credentials, as RFC 6749 section
	// 5.2 wants when they were tried and failed.
	basicChallenge bool
}

// oauthError is the body of an OAuth error answer (RFC 6749 section 5.2).
type oauthError struct {
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func oauthFailure(status int, code, description string) reply {
	return reply{status: status, body: oauthError{Code: code, Description: description}}
}

func invalidGrant(description string) reply {
	return oauthFailure(http.StatusBadRequest, "invalid_grant", description)
}

func (r reply) write(w http.ResponseWriter) {
	if r.basicChallenge {
		w.Header().Set("WWW-Authenticate", `Basic realm="oauthtest"`)
	}
	if r.body == nil {
		w.WriteHeader(r.status)
		return
	}
	writeJSON(w, r.status, r.body)
}

// writeJSON answers with v. Content-Type must be exactly application/json
// (parameters allowed): the go-sdk client refuses metadata served as
// anything else.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
