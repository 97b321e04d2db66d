package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway/console"
	"github.com/mcpvisor/mcpvisor/manager"
)

// The view token shows the console but offers no action and refuses
// every one, as a login or as a bearer token; the token itself still
// acts.
func TestViewTokenOnlyViews(t *testing.T) {
	f := newFixture(t, "", nil)
	u := serveConsole(t, console.Options{Backend: f.m, Token: "act-token", ViewToken: "view-token",
		Reload: func(context.Context) (string, error) { return "", nil }})

	viewer := browser(t)
	resp, _ := post(t, viewer, u+"/ui/login", url.Values{"token": {"view-token"}, "next": {"/ui"}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	for _, path := range []string{"/ui", "/ui/servers/demo"} {
		code, page := get(t, viewer, u+path)
		require.Equal(t, http.StatusOK, code, path)
		require.Contains(t, page, ">demo</a>", path)
		require.Contains(t, page, "view only", path)
		require.NotContains(t, page, `name="csrf" value="`+"\"", path)
		for _, form := range []string{"/reconnect", "/disable", "/tools/add", "/ui/reload"} {
			require.NotContains(t, page, form+`"`, path)
		}
	}
	// Even with the CSRF token its logout form carries, no action passes.
	_, page := get(t, viewer, u+"/ui")
	token := csrfOf(t, page)
	for _, action := range []string{"/ui/servers/demo/disable", "/ui/servers/demo/tools/add", "/ui/reload"} {
		resp, body := post(t, viewer, u+action, url.Values{"csrf": {token}, "arg.a": {"1"}, "arg.b": {"2"}})
		require.Equal(t, http.StatusForbidden, resp.StatusCode, action)
		require.Contains(t, body, "may only view", action)
	}
	req, err := http.NewRequest("POST", u+"/ui/servers/demo/disable", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer view-token")
	r2, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, r2.Body)
	r2.Body.Close()
	require.Equal(t, http.StatusForbidden, r2.StatusCode)
	st, err := f.m.Status("demo")
	require.NoError(t, err)
	require.Equal(t, manager.StateConnected, st.State)

	// Logging out works for a viewer too.
	resp, _ = post(t, viewer, u+"/ui/logout", url.Values{"csrf": {token}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	code, _ := get(t, viewer, u+"/ui")
	require.Equal(t, http.StatusUnauthorized, code)

	actor := browser(t)
	post(t, actor, u+"/ui/login", url.Values{"token": {"act-token"}, "next": {"/ui"}})
	_, page = get(t, actor, u+"/ui")
	require.NotContains(t, page, "view only")
	resp, _ = post(t, actor, u+"/ui/servers/demo/disable", url.Values{"csrf": {csrfOf(t, page)}})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	f.waitState(t, "demo", manager.StateDisabled)
}
