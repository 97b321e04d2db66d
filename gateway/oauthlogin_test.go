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

func newLoginRig(t *testing.T) *loginRig {
	t.Helper()
	return newLoginRigWith(t, manager.Timeouts{}, "")
}

// newLoginRigWith is newLoginRig with saas given timeouts, and the
// gateway's fast path as fastPath says.
func newLoginRigWith(t *testing.T, timeouts manager.Timeouts, fastPath string) *loginRig {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := &loginRig{as: oauthtest.NewAuthServer(t, nil)}
	r.rs = oauthtest.NewResourceServer(t, r.as, nil)
	r.m = manager.New(manager.Options{StateDir: t.TempDir()})
	gw := gateway.New(gateway.Options{Source: r.m, Version: "test", FastPath: fastPath})
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
	require.NoError(t, r.m.Add("saas", manager.Spec{Transport: manager.TransportHTTP, URL: r.rs.URL(), Timeouts: timeouts}))
	require.NoError(t, r.m.Login(ctx, "saas", manager.LoginOptions{Out: io.Discard, Browser: oauthtest.BrowserScript(t)}))
	return r
}

// loginClient is a go-sdk client of the gateway, of one protocol
// generation, that declares URL-mode elicitation (unless it is told not
// to) and answers each link with answer, keeping what it was sent.
type loginClient struct {
	mu   sync.Mutex
	got  []*mcp.ElicitParams // guarded by mu
	sess *mcp.ClientSession
}

// loginVersions are the generations a calling client may speak: on
// 2025-11-25 the link reaches it as a request on its call's stream, on
// 2026-07-28 (no session) as an input request of its call.
var loginVersions = []string{"2025-11-25", "2026-07-28"}

func connectLoginClient(t *testing.T, ctx context.Context, base, version string, answer func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)) *loginClient {
	t.Helper()
	return connectLoginClientWith(t, ctx, base, version,
		&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}}, answer)
}

func connectLoginClientWith(t *testing.T, ctx context.Context, base, version string, caps *mcp.ClientCapabilities, answer func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)) *loginClient {
	t.Helper()
	c := &loginClient{}
	client := mcp.NewClient(&mcp.Implementation{Name: "browser-client", Version: "1"}, &mcp.ClientOptions{
		Capabilities: caps,
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.got = append(c.got, req.Params)
			c.mu.Unlock()
			return answer(ctx, req.Params)
		},
	})
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	require.Equal(t, version, sess.InitializeResult().ProtocolVersion)
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
// client the authorization link as a URL-mode elicitation (on 2026-07-28,
// an input request of the call); once the user has been through it, the
// call goes on and is answered. A 2025-11-25 client's call to the HTTP
// server takes the fast path when it is on, login and all.
func TestLoginLinkGoesToTheCallingClient(t *testing.T) {
	for _, version := range loginVersions {
		for _, fastPath := range []string{"on", "off"} {
			t.Run(version+" fast path "+fastPath, func(t *testing.T) { loginLinkGoesToTheCallingClient(t, version, fastPath) })
		}
	}
}

func loginLinkGoesToTheCallingClient(t *testing.T, version, fastPath string) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := newLoginRigWith(t, manager.Timeouts{}, fastPath)
	c := connectLoginClient(t, ctx, r.base, version, func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
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
	if fastPath == "on" && version < "2026-07-28" {
		require.EqualValues(t, 1, gateway.FastServed(r.gw), "on the fast path")
	}
}

// A client that declines the link gets the call's failure at once, saying
// that a login is needed and was declined; the server waits for a login
// from the host as before.
func TestLoginLinkDeclinedByTheClient(t *testing.T) {
	for _, version := range loginVersions {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			r := newLoginRig(t)
			c := connectLoginClient(t, ctx, r.base, version, func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
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
		})
	}
}

// A server already waiting for a login (its user logged out) is logged
// into through the client that calls it, when that client can open URLs.
func TestLoginLinkForAServerWaitingForALogin(t *testing.T) {
	for _, version := range loginVersions {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			r := newLoginRig(t)
			_, err := r.m.Logout("saas")
			require.NoError(t, err)
			_, err = r.m.Wait(ctx, "saas", manager.StateUnauthorized)
			require.NoError(t, err)
			c := connectLoginClient(t, ctx, r.base, version, func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
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
		})
	}
}

// A client that declared no URL-mode elicitation (it can fill in forms)
// is not sent the link: the login is the host's to make, and once the
// call's time is up without one the call fails, saying that the server
// needs its user to log in; the server waits for the host's login.
func TestLoginNeededByAClientThatCannotOpenURLs(t *testing.T) {
	for _, version := range loginVersions {
		t.Run(version, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			// Short calls: nobody here logs in.
			r := newLoginRigWith(t, manager.Timeouts{Request: 3 * time.Second}, "")
			forms := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
			c := connectLoginClientWith(t, ctx, r.base, version, forms, func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
			})

			res, err := c.sess.CallTool(ctx, &mcp.CallToolParams{Name: "saas__" + oauthtest.ToolAdmin, Arguments: map[string]any{}})
			require.NoError(t, err)
			require.True(t, res.IsError)
			text := res.Content[0].(*mcp.TextContent).Text
			require.Contains(t, text, oauthtest.ScopeAdmin, "the scopes the call needs")
			require.Contains(t, text, "needs its user to log in", "the remedy")
			require.Empty(t, c.links(), "no link, nor a form in its place")
			require.Equal(t, 1, r.as.Stats().Authorizations, "only the host's login")
			require.Zero(t, r.rs.Stats().ToolCalls)
			st, err := r.m.Status("saas")
			require.NoError(t, err)
			require.Equal(t, manager.StateUnauthorized, st.State)
			require.Equal(t, manager.RemedyLogin, st.Remedy.Kind)
		})
	}
}
