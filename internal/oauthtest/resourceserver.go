package oauthtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Where a [ResourceServer] serves what.
const (
	// MCPPath is the MCP endpoint: streamable HTTP (or HTTP+SSE) behind a
	// bearer token.
	MCPPath = "/mcp"
	// ResourceMetadataPath is the protected resource metadata (RFC 9728) for
	// MCPPath: the well-known prefix with the endpoint's path after it. The
	// 401 challenge names it; the go-sdk client would also find it there
	// without the challenge.
	ResourceMetadataPath = "/.well-known/oauth-protected-resource" + MCPPath
)

// The resource server's tools.
const (
	// ToolWhoAmI answers the token's [Identity]. It needs the base scopes.
	ToolWhoAmI = "whoami"
	// ToolAdmin answers the same, but also needs the admin scope: calling it
	// with a token that lacks it is answered 403 insufficient_scope, which
	// is where a client steps up.
	ToolAdmin = "admin"
)

// ResourceServerOptions configures a [ResourceServer]. The zero value needs
// [ScopeTools] for everything and [ScopeAdmin] for the admin tool.
type ResourceServerOptions struct {
	// Scopes are needed by every request and are the scopes_supported of
	// the metadata, which is what the go-sdk client asks for at first. If
	// nil, [ScopeTools].
	Scopes []string
	// AdminScope is what [ToolAdmin] needs on top. It is left out of the
	// metadata, so that a client learns it only from the 403 challenge. If
	// empty, [ScopeAdmin].
	AdminScope string
	// SSE serves the MCP endpoint with the legacy HTTP+SSE transport (a GET
	// opens the event stream, messages are POSTed to the endpoint it
	// names, which is MCPPath with a session query) instead of streamable
	// HTTP, behind the same bearer and scope checks. The SDK does not
	// hand such a session the token's details, so the whoami tool answers
	// an empty [Identity].
	SSE bool
	// OpenHandshake answers the MCP handshake (initialize and its
	// notifications/initialized) without a token: the server asks for a
	// login only on what comes after (tools/list, a call, the event
	// stream), so a client that probes initialize is never challenged.
	OpenHandshake bool
}

// Identity is the answer of the whoami and admin tools: what the resource
// server learnt from the bearer token of the call.
type Identity struct {
	Subject  string   `json:"subject"`
	ClientID string   `json:"client_id"`
	Issuer   string   `json:"issuer"`
	Resource string   `json:"resource"`
	Scopes   []string `json:"scopes"`
}

// ResourceStats counts the answers a [ResourceServer] gave.
type ResourceStats struct {
	Unauthorized      int // 401: no token, or one its authorization server refused
	InsufficientScope int // 403 insufficient_scope
	ToolCalls         int // tool calls that reached a tool
}

// ResourceServer is a real MCP server (go-sdk mcp.Server over streamable
// HTTP, or HTTP+SSE) that trusts one [AuthServer]. Make one with [NewResourceServer].
type ResourceServer struct {
	srv        *httptest.Server
	origin     string // "http://127.0.0.1:PORT"
	mcp        *mcp.Server
	scopes     []string
	adminScope string
	sse        bool

	mu    sync.Mutex // guards the following
	as    *AuthServer
	stats ResourceStats
	// unversioned are the session requests that came without an
	// MCP-Protocol-Version header (see Unversioned).
	unversioned []string
	versions    []string // MCP-Protocol-Version headers seen (ProtocolVersions)
}

// NewResourceServer starts a resource server on 127.0.0.1 that trusts as,
// and closes it when t ends. opts may be nil.
func NewResourceServer(t testing.TB, as *AuthServer, opts *ResourceServerOptions) *ResourceServer {
	t.Helper()
	var o ResourceServerOptions
	if opts != nil {
		o = *opts
	}
	rs := &ResourceServer{
		scopes:     []string{ScopeTools},
		adminScope: o.AdminScope,
		sse:        o.SSE,
	}
	if o.Scopes != nil {
		rs.scopes = slices.Clone(o.Scopes)
	}
	if rs.adminScope == "" {
		rs.adminScope = ScopeAdmin
	}

	rs.mcp = mcp.NewServer(&mcp.Implementation{Name: "oauthtest", Version: "v0.0.1"}, nil)
	mcp.AddTool(rs.mcp, &mcp.Tool{Name: ToolWhoAmI, Description: "Who the bearer token is for."}, rs.whoami)
	mcp.AddTool(rs.mcp, &mcp.Tool{Name: ToolAdmin, Description: "Like whoami, but needs the admin scope."}, rs.whoami)
	var endpoint http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return rs.mcp }, nil)
	if o.SSE {
		endpoint = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return rs.mcp }, nil)
	}

	mux := http.NewServeMux()
	mux.HandleFunc(ResourceMetadataPath, func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(rs.Metadata()).ServeHTTP(w, r)
	})
	// The bearer middleware needs the metadata URL, which has the server's
	// address in it: NewUnstartedServer is listening already.
	rs.srv = httptest.NewUnstartedServer(mux)
	rs.origin = "http://" + rs.srv.Listener.Addr().String()
	requireToken := auth.RequireBearerToken(rs.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: rs.MetadataURL(),
	})
	var guarded http.Handler = rs.countUnauthorized(requireToken(rs.requireScopes(endpoint)))
	if o.OpenHandshake {
		guarded = openHandshake(endpoint, guarded)
	}
	mux.Handle(MCPPath, rs.recordVersions(guarded))
	rs.srv.Start()

	rs.SetAuthServer(as)
	t.Cleanup(rs.Close)
	return rs
}

// Close stops the server and ends its MCP sessions. It is safe to call more
// than once.
func (rs *ResourceServer) Close() {
	rs.srv.CloseClientConnections()
	rs.srv.Close()
	for ss := range rs.mcp.Sessions() {
		ss.Close()
	}
}

// URL is the MCP endpoint, such as "http://127.0.0.1:41235/mcp". It is also
// the resource identifier: the resource of the metadata, the resource
// parameter a client sends, and the audience of the tokens the server
// accepts.
func (rs *ResourceServer) URL() string { return rs.origin + MCPPath }

// MetadataURL is where the protected resource metadata is served.
func (rs *ResourceServer) MetadataURL() string { return rs.origin + ResourceMetadataPath }

// SetAuthServer makes the server trust as instead, as when a service moves
// to another identity provider: its metadata names as from now on, and
// tokens of the former authorization server are refused.
func (rs *ResourceServer) SetAuthServer(as *AuthServer) {
	as.AllowResource(rs.URL())
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.as = as
}

// Stats returns the counts so far.
func (rs *ResourceServer) Stats() ResourceStats {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.stats
}

// Metadata is the protected resource metadata as it stands: the resource,
// the one authorization server it trusts, and the base scopes.
func (rs *ResourceServer) Metadata() *oauthex.ProtectedResourceMetadata {
	rs.mu.Lock()
	as := rs.as
	rs.mu.Unlock()
	return &oauthex.ProtectedResourceMetadata{
		Resource:               rs.URL(),
		AuthorizationServers:   []string{as.Issuer()},
		ScopesSupported:        slices.Clone(rs.scopes),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "oauthtest resource server",
	}
}

// verify is the auth.TokenVerifier: it asks the trusted authorization
// server, then checks the token was made for this resource (the audience
// check of RFC 8707), so that a token for another server cannot be replayed
// here.
func (rs *ResourceServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	rs.mu.Lock()
	as := rs.as
	rs.mu.Unlock()
	at, err := as.Verify(token)
	if err != nil {
		return nil, err
	}
	if at.Resource != rs.URL() {
		return nil, fmt.Errorf("%w: token is for resource %q", auth.ErrInvalidToken, at.Resource)
	}
	return &auth.TokenInfo{
		Scopes:     at.Scopes,
		Expiration: at.Expiry,
		UserID:     at.Subject,
		Extra: map[string]any{
			"client_id": at.ClientID,
			"issuer":    at.Issuer,
			"resource":  at.Resource,
		},
	}, nil
}

func (rs *ResourceServer) whoami(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Identity, error) {
	rs.mu.Lock()
	rs.stats.ToolCalls++
	rs.mu.Unlock()
	var ti *auth.TokenInfo
	if req.Extra != nil {
		ti = req.Extra.TokenInfo
	}
	if ti == nil && rs.sse {
		return nil, Identity{}, nil // it passed the bearer check, which the SDK does not tell an SSE session about
	}
	if ti == nil {
		return nil, Identity{}, fmt.Errorf("no token info: the request did not pass the bearer check")
	}
	str := func(k string) string { s, _ := ti.Extra[k].(string); return s }
	return nil, Identity{
		Subject:  ti.UserID,
		ClientID: str("client_id"),
		Issuer:   str("issuer"),
		Resource: str("resource"),
		Scopes:   ti.Scopes,
	}, nil
}
