package gateway_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/oauthtest"
	"github.com/mcpvisor/mcpvisor/manager"
)

// loginRig is a gateway over HTTP in front of a manager with one server,
// saas, behind OAuth, logged in once by the host.
type loginRig struct {
	m    *manager.Manager
	gw   *gateway.Gateway
	as   *oauthtest.AuthServer
	rs   *oauthtest.ResourceServer
	base string
}

func newLoginRig(t *testing.T) *loginRig { return newLoginRigWith(t, "") }

// newLoginRigWith is newLoginRig with the fast path as setting says.
func newLoginRigWith(t *testing.T, setting string) *loginRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := &loginRig{as: oauthtest.NewAuthServer(t, nil)}
	r.rs = oauthtest.NewResourceServer(t, r.as, nil)
	r.m = manager.New(manager.Options{StateDir: t.TempDir()})
	gw := gateway.New(gateway.Options{Source: r.m, Version: "test", FastPath: setting})
	r.gw = gw
	srv, err := gw.Listen(gateway.HTTPOptions{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, srv.Close(ctx))
		gw.Close()
		require.NoError(t, r.m.Close(ctx))
	})
	r.base = "http://" + srv.Addr()
	require.NoError(t, r.m.Add("saas", manager.Spec{Transport: manager.TransportHTTP, URL: r.rs.URL()}))
	require.NoError(t, r.m.Login(ctx, "saas", manager.LoginOptions{Out: io.Discard, Browser: oauthtest.BrowserScript(t)}))
	return r
}

// loginClient is a go-sdk client of the gateway that declares URL-mode
// elicitation and answers each link with answer, keeping what it was sent.
type loginClient struct {
	mu   sync.Mutex
	got  []*mcp.ElicitParams // guarded by mu
	sess *mcp.ClientSession
}

func connectLoginClient(t *testing.T, ctx context.Context, base string, answer func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)) *loginClient {
	t.Helper()
	c := &loginClient{}
	client := mcp.NewClient(&mcp.Implementation{Name: "browser-client", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.got = append(c.got, req.Params)
			c.mu.Unlock()
			return answer(ctx, req.Params)
		},
	})
	// On the protocol the fast path serves.
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: fastProtocol})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sess.Close() })
	c.sess = sess
	return c
}

func (c *loginClient) links() []*mcp.ElicitParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), c.got...)
}

// A call that needs a login (here more scopes, asked with a 403
// insufficient_scope) made by a client that can open URLs sends that
// client the authorization link as a URL-mode elicitation; once the user
// has been through it, the call goes on and is answered; with the fast
// path on, on the fast path.
func TestLoginLinkGoesToTheCallingClient(t *testing.T) {
	for _, setting := range []string{"on", "off"} {
		t.Run("fast path "+setting, func(t *testing.T) { loginLinkGoesToTheCallingClient(t, setting) })
	}
}

func loginLinkGoesToTheCallingClient(t *testing.T, setting string) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := newLoginRigWith(t, setting)
	c := connectLoginClient(t, ctx, r.base, func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if err := oauthtest.Browse(ctx, p.URL); err != nil { // the user opens it and consents
			return nil, err
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	})

	res, err := c.sess.CallTool(ctx, &mcp.CallToolParams{Name: "saas__" + oauthtest.ToolAdmin, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, oauthtest.ScopeAdmin)

	links := c.links()
	require.Len(t, links, 1)
	require.Equal(t, "url", links[0].Mode)
	require.True(t, strings.HasPrefix(links[0].URL, r.as.URL()), "the link is the authorization server's: %s", links[0].URL)
	require.NotEmpty(t, links[0].ElicitationID)
	require.Contains(t, links[0].Message, "saas")
	require.Equal(t, 2, r.as.Stats().Authorizations, "the host's login, then the client's")
	require.Equal(t, 1, r.rs.Stats().ToolCalls, "the call reached the tool once, after the login")
	st, err := r.m.Status("saas")
	require.NoError(t, err)
	require.Equal(t, manager.StateConnected, st.State)
	if setting == "on" {
		require.EqualValues(t, 1, gateway.FastServed(r.gw))
	}
}

// A client that declines the link gets the call's failure at once, saying
// that a login is needed and was declined; the server waits for a login
// from the host as before.
func TestLoginLinkDeclinedByTheClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := newLoginRig(t)
	c := connectLoginClient(t, ctx, r.base, func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	})

	res, err := c.sess.CallTool(ctx, &mcp.CallToolParams{Name: "saas__" + oauthtest.ToolAdmin, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	text := res.Content[0].(*mcp.TextContent).Text
	require.Contains(t, text, "decline")
	require.Contains(t, text, "log in")
	require.Len(t, c.links(), 1)
	require.Equal(t, 1, r.as.Stats().Authorizations, "only the host's login")
	require.Zero(t, r.rs.Stats().ToolCalls)
	st, err := r.m.Status("saas")
	require.NoError(t, err)
	require.Equal(t, manager.StateUnauthorized, st.State)
	require.Equal(t, manager.RemedyLogin, st.Remedy.Kind)
}

// A server already waiting for a login (its user logged out) is logged
// into through the client that calls it, when that client can open URLs.
func TestLoginLinkForAServerWaitingForALogin(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := newLoginRig(t)
	_, err := r.m.Logout("saas")
	require.NoError(t, err)
	_, err = r.m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	c := connectLoginClient(t, ctx, r.base, func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		if err := oauthtest.Browse(ctx, p.URL); err != nil {
			return nil, err
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	})

	res, err := c.sess.CallTool(ctx, &mcp.CallToolParams{Name: "saas__" + oauthtest.ToolWhoAmI, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Len(t, c.links(), 1)
	require.Equal(t, 2, r.as.Stats().Authorizations)
	require.Equal(t, 1, r.rs.Stats().ToolCalls)
}
