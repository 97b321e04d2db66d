package oauthtest

import (
	"context"
	"net/http"
	"net/url"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// authURLFor is an authorization URL for a public client of as that
// redirects to cb.
func authURLFor(t *testing.T, as *AuthServer, cb *Callback) string {
	t.Helper()
	c := Client{ID: "browser-test", RedirectURIs: []string{cb.URL()}}
	require.NoError(t, as.RegisterClient(c))
	as.AllowResource(testResource)
	return oauth2Config(as, c, oauth2.AuthStyleInParams, ScopeTools).AuthCodeURL("st",
		oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("resource", testResource))
}

// fetch runs the callback's fetcher with open, as the go-sdk handler would.
func fetch(t *testing.T, cb *Callback, authURL string, open func(context.Context, string) error) (*auth.AuthorizationResult, error) {
	t.Helper()
	return cb.Fetcher(open)(testContext(t), &auth.AuthorizationArgs{URL: authURL})
}

// Consent stops at the redirect; Browse follows it to the listener, which
// hands code, state and iss to the fetcher.
func TestConsentAndBrowse(t *testing.T) {
	as := NewAuthServer(t, nil)
	cb := NewCallback(t)
	authURL := authURLFor(t, as, cb)

	loc, err := Consent(testContext(t), authURL)
	require.NoError(t, err)
	u, err := url.Parse(loc)
	require.NoError(t, err)
	assert.Equal(t, cb.URL(), u.Scheme+"://"+u.Host+u.Path)

	res, err := fetch(t, cb, authURL, Browse)
	require.NoError(t, err)
	assert.Equal(t, "st", res.State)
	assert.Equal(t, as.Issuer(), res.Iss)
	assert.NotEmpty(t, res.Code)
	assert.NotEqual(t, u.Query().Get("code"), res.Code, "a code per authorization")
	assert.Equal(t, 2, as.Stats().Authorizations)
}

// An error page of the authorization server is an error of Consent and of
// Browse; an error redirect reaches the fetcher's caller as an
// AuthorizationError.
func TestBrowseErrors(t *testing.T) {
	as := NewAuthServer(t, nil)
	cb := NewCallback(t)
	authURL := authURLFor(t, as, cb)
	u, _ := url.Parse(authURL)
	q := u.Query()
	q.Set("client_id", "nobody")
	u.RawQuery = q.Encode()

	var page *PageError
	_, err := Consent(testContext(t), u.String())
	require.ErrorAs(t, err, &page)
	assert.Equal(t, http.StatusBadRequest, page.Status)
	assert.Contains(t, page.Body, "unknown client_id")
	require.ErrorAs(t, Browse(testContext(t), u.String()), &page)

	as.SetDenyConsent(true)
	_, err = fetch(t, cb, authURL, Browse)
	var ae *AuthorizationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "access_denied", ae.Code)

	assert.ErrorContains(t, Browse(testContext(t), "http://192.0.2.1/authorize"), "not http(s) on a loopback address")
}

// The stand-in browser scripts follow the URL through to the listener, and
// exit non-zero on an error page. Each tool the machine has is tried.
func TestBrowserScript(t *testing.T) {
	for _, tool := range []string{"curl", "python3"} {
		t.Run(tool, func(t *testing.T) {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("no %s here", tool)
			}
			as := NewAuthServer(t, nil)
			cb := NewCallback(t)
			authURL := authURLFor(t, as, cb)
			script := browserScript(t, tool)

			res, err := fetch(t, cb, authURL, runBrowser(script))
			require.NoError(t, err)
			assert.Equal(t, "st", res.State)
			assert.NotEmpty(t, res.Code)

			err = exec.Command(script, as.URL()+"/authorize?client_id=nobody").Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "an error page fails the script")
		})
	}
	assert.FileExists(t, BrowserScript(t))
}
