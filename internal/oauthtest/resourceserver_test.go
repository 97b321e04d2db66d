package oauthtest

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// tokenFor logs in to as for rs with the given scopes, without the go-sdk
// handler, and returns the access token.
func tokenFor(t *testing.T, as *AuthServer, rs *ResourceServer, scopes ...string) string {
	t.Helper()
	c := Client{ID: "c-" + strings.Join(scopes, "-"), RedirectURIs: []string{"http://127.0.0.1:1/cb"}}
	if !slices.Contains(as.Clients(), c.ID) {
		require.NoError(t, as.RegisterClient(c))
	}
	return login(t, oauth2Config(as, c, oauth2.AuthStyleInParams, scopes...), rs.URL()).AccessToken
}

// post sends one JSON-RPC message to the MCP endpoint, with a bearer token
// unless token is empty, and returns the response (body closed).
func post(t *testing.T, rs *ResourceServer, token, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodPost, rs.URL(), strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

// challenge parses the one Bearer challenge of a response.
func challenge(t *testing.T, resp *http.Response) map[string]string {
	t.Helper()
	cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.Equal(t, "bearer", cs[0].Scheme)
	return cs[0].Params
}

const callAdmin = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin","arguments":{}}}`

// Without a valid token the answer is 401 with a challenge naming the
// metadata, which the go-sdk's own fetcher accepts and which names the
// authorization server.
func TestResourceServerChallenge(t *testing.T) {
	as := NewAuthServer(t, nil)
	rs := NewResourceServer(t, as, nil)

	for _, token := range []string{"", "at_nonsense"} {
		resp := post(t, rs, token, callAdmin)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
		assert.Equal(t, map[string]string{"resource_metadata": rs.MetadataURL()}, challenge(t, resp))
	}
	assert.Equal(t, ResourceStats{Unauthorized: 2}, rs.Stats())

	prm, err := oauthex.GetProtectedResourceMetadata(testContext(t), rs.MetadataURL(), rs.URL(), nil)
	require.NoError(t, err)
	assert.Equal(t, rs.URL(), prm.Resource)
	assert.Equal(t, []string{as.Issuer()}, prm.AuthorizationServers)
	assert.Equal(t, []string{ScopeTools}, prm.ScopesSupported, "the admin scope is learnt from the 403")
}

// A call of the admin tool without the admin scope is answered 403
// insufficient_scope naming every scope the call needs; other calls, and
// the admin tool with the scope, go through.
func TestResourceServerInsufficientScope(t *testing.T) {
	as := NewAuthServer(t, nil)
	rs := NewResourceServer(t, as, nil)
	base := tokenFor(t, as, rs, ScopeTools)

	resp := post(t, rs, base, callAdmin)
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	params := challenge(t, resp)
	assert.Equal(t, "insufficient_scope", params["error"])
	assert.Equal(t, ScopeTools+" "+ScopeAdmin, params["scope"])
	assert.Equal(t, rs.MetadataURL(), params["resource_metadata"])
	assert.Equal(t, 1, rs.Stats().InsufficientScope)

	none := tokenFor(t, as, rs)
	resp = post(t, rs, none, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "every call needs the base scope")
	assert.Equal(t, ScopeTools, challenge(t, resp)["scope"])

	// Past the scope check the MCP handler answers; without a session it
	// may refuse the call, but not for lack of scope.
	callWhoAmI := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	admin := tokenFor(t, as, rs, ScopeTools, ScopeAdmin)
	for _, status := range []int{post(t, rs, base, callWhoAmI).StatusCode, post(t, rs, admin, callAdmin).StatusCode} {
		assert.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, status)
	}
	assert.Equal(t, 2, rs.Stats().InsufficientScope)
}

// The resource server takes only tokens made for it (RFC 8707 audience),
// and after SetAuthServer only tokens of the new authorization server.
func TestResourceServerTrust(t *testing.T) {
	as := NewAuthServer(t, nil)
	rs := NewResourceServer(t, as, nil)
	other := NewResourceServer(t, as, nil)

	resp := post(t, rs, tokenFor(t, as, other, ScopeTools), callAdmin)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a token for another resource")

	tok := tokenFor(t, as, rs, ScopeTools)
	assert.Equal(t, http.StatusForbidden, post(t, rs, tok, callAdmin).StatusCode, "known, lacking the scope")

	moved := NewAuthServer(t, nil)
	rs.SetAuthServer(moved)
	assert.Equal(t, http.StatusUnauthorized, post(t, rs, tok, callAdmin).StatusCode, "the former server's token")
	assert.Equal(t, []string{moved.Issuer()}, rs.Metadata().AuthorizationServers)
	assert.Equal(t, http.StatusForbidden, post(t, rs, tokenFor(t, moved, rs, ScopeTools), callAdmin).StatusCode)
}

// With a token in hand and no OAuth handler at all, whoami answers what the
// resource server saw; the options rename the scopes.
func TestResourceServerWhoAmI(t *testing.T) {
	as := NewAuthServer(t, &AuthServerOptions{Scopes: []string{"read", "write"}, Subject: "alice"})
	rs := NewResourceServer(t, as, &ResourceServerOptions{Scopes: []string{"read"}, AdminScope: "write"})
	tok := &oauth2.Token{AccessToken: tokenFor(t, as, rs, "read"), TokenType: "Bearer"}

	c := mcp.NewClient(&mcp.Implementation{Name: "static-token", Version: "v0.0.1"}, nil)
	s, err := c.Connect(testContext(t), &mcp.StreamableClientTransport{
		Endpoint:             rs.URL(),
		HTTPClient:           oauth2.NewClient(testContext(t), oauth2.StaticTokenSource(tok)),
		DisableStandaloneSSE: true,
	}, nil)
	require.NoError(t, err)
	defer s.Close()

	assert.Equal(t, Identity{
		Subject:  "alice",
		ClientID: "c-read",
		Issuer:   as.Issuer(),
		Resource: rs.URL(),
		Scopes:   []string{"read"},
	}, call(t, s, ToolWhoAmI))
	_, err = s.CallTool(testContext(t), &mcp.CallToolParams{Name: ToolAdmin})
	assert.Error(t, err, "no handler to step up with")
	assert.Equal(t, ResourceStats{InsufficientScope: 1, ToolCalls: 1}, rs.Stats())
}

// With OpenHandshake the handshake is answered without a token and what
// comes after asks for one.
func TestResourceServerOpenHandshake(t *testing.T) {
	as := NewAuthServer(t, nil)
	rs := NewResourceServer(t, as, &ResourceServerOptions{OpenHandshake: true})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	assert.Equal(t, http.StatusOK, post(t, rs, "", init).StatusCode)
	resp := post(t, rs, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, map[string]string{"resource_metadata": rs.MetadataURL()}, challenge(t, resp))
	assert.Equal(t, []string{"POST tools/list"}, rs.Unversioned())
}
