package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/console"
	"github.com/mcpvisor/mcpvisor/manager"
)

// serveConsole serves a console made with opts on loopback.
func serveConsole(t *testing.T, opts console.Options) string {
	t.Helper()
	c := console.New(opts)
	srv := httptest.NewServer(c)
	t.Cleanup(func() {
		c.Close()
		srv.Close()
	})
	return srv.URL
}

// The reload button answers at once, while the reload still runs (it
// may move the listener the page came through), and the servers page
// then shows how it went; a second one is refused while the first runs.
func TestReloadRunsAfterThePageAnswers(t *testing.T) {
	f := newFixture(t, "", nil)
	release := make(chan struct{})
	u := serveConsole(t, console.Options{Backend: f.m, Reload: func(ctx context.Context) (string, error) {
		select {
		case <-release:
			return "added <b>weather</b>; 1 unchanged", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}})
	c := browser(t)
	_, page := get(t, c, u+"/ui")
	require.Contains(t, page, `action="/ui/reload"`)
	token := csrfOf(t, page)

	resp, _ := post(t, c, u+"/ui/reload", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = get(t, c, u+"/ui")
	require.Contains(t, page, `reload the config: <span class="wait">running</span>`)

	resp, _ = post(t, c, u+"/ui/reload", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "already+running")

	close(release)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		_, page := get(t, c, u+"/ui")
		assert.Contains(ct, page, `reload the config: <span class="ok">done</span>`)
		assert.Contains(ct, page, `<pre class="output">added &lt;b&gt;weather&lt;/b&gt;; 1 unchanged</pre>`)
	}, 20*time.Second, 20*time.Millisecond)

	// A console without a config to reload offers none.
	_, page = get(t, c, f.url+"/ui")
	require.NotContains(t, page, `action="/ui/reload"`)
	resp, _ = post(t, c, f.url+"/ui/reload", url.Values{"csrf": {csrfOf(t, page)}})
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// loginBackend is the manager, whose logins show an authorization URL
// and then wait for a redirect that never comes.
type loginBackend struct {
	*manager.Manager
	opts chan manager.LoginOptions
}

func (b loginBackend) Login(ctx context.Context, server string, opts manager.LoginOptions) error {
	b.opts <- opts
	fmt.Fprintf(opts.Out, "To log in to %s, open this URL in a browser:\n\n  https://auth.example/authorize?client_id=x&state=\"<y>\"\n\nWaiting for the browser to come back to http://127.0.0.1:5555/callback …\n", server)
	<-ctx.Done()
	return ctx.Err()
}

// Log in on an HTTP server's page starts its OAuth login without opening
// a browser where mcpvisor runs, and shows the authorization link to
// open; a server that is a process offers no login.
func TestLoginShowsTheAuthorizationLink(t *testing.T) {
	f := newFixture(t, "", nil)
	none := 0
	require.NoError(t, f.m.Add("remote", manager.Spec{Transport: manager.TransportHTTP, URL: "http://127.0.0.1:1/mcp", MaxRetries: &none}))
	b := loginBackend{Manager: f.m, opts: make(chan manager.LoginOptions, 1)}
	u := serveConsole(t, console.Options{Backend: b})
	c := browser(t)
	_, page := get(t, c, u+"/ui/servers/remote")
	require.Contains(t, page, `action="/ui/servers/remote/login"`)
	resp, _ := post(t, c, u+"/ui/servers/remote/login", url.Values{"csrf": {csrfOf(t, page)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Regexp(t, `^/ui/servers/remote\?done=`, resp.Header.Get("Location"))
	require.Equal(t, "none", (<-b.opts).Browser)

	_, page = get(t, c, u+resp.Header.Get("Location"))
	require.Contains(t, page, `log in to remote: <span class="wait">running</span>`)
	require.Contains(t, page, `<a href="https://auth.example/authorize?client_id=x&amp;state=%22%3cy%3e%22" id="login-link"`)
	require.NotContains(t, page, `"<y>"`)

	_, page = get(t, c, u+"/ui/servers/demo")
	require.NotContains(t, page, `/login"`)
}
