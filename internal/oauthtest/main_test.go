package oauthtest

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/oauth2"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testResource is a resource indicator for tests of the authorization
// server alone. Nothing listens there; it is only a name.
const testResource = "http://127.0.0.1:9/mcp"

// testContext is a context that ends with the test, and after 30 seconds at
// the latest, so that a broken flow fails instead of hanging.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// oauth2Config is a golang.org/x/oauth2 client of as.
func oauth2Config(as *AuthServer, c Client, style oauth2.AuthStyle, scopes ...string) *oauth2.Config {
	m := as.Metadata()
	return &oauth2.Config{
		ClientID:     c.ID,
		ClientSecret: c.Secret,
		Endpoint:     oauth2.Endpoint{AuthURL: m.AuthorizationEndpoint, TokenURL: m.TokenEndpoint, AuthStyle: style},
		RedirectURL:  c.RedirectURIs[0],
		Scopes:       scopes,
	}
}

// authorize runs the browser half of a login: it returns the query of the
// redirect back to the client, and the PKCE verifier.
func authorize(t *testing.T, cfg *oauth2.Config, resource string, extra ...oauth2.AuthCodeOption) (url.Values, string) {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	opts := append([]oauth2.AuthCodeOption{
		oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("resource", resource),
	}, extra...)
	loc, err := Consent(testContext(t), cfg.AuthCodeURL("the-state", opts...))
	require.NoError(t, err)
	u, err := url.Parse(loc)
	require.NoError(t, err)
	return u.Query(), verifier
}

// login runs a whole login and returns the tokens.
func login(t *testing.T, cfg *oauth2.Config, resource string) *oauth2.Token {
	t.Helper()
	q, verifier := authorize(t, cfg, resource)
	require.Empty(t, q.Get("error"), q.Get("error_description"))
	tok, err := cfg.Exchange(testContext(t), q.Get("code"),
		oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	require.NoError(t, err)
	return tok
}

// refresh trades a refresh token for new tokens, as golang.org/x/oauth2's
// token source does when an access token runs out.
func refresh(t *testing.T, cfg *oauth2.Config, refreshToken string) (*oauth2.Token, error) {
	t.Helper()
	return cfg.TokenSource(testContext(t), &oauth2.Token{RefreshToken: refreshToken}).Token()
}

// oauthErrorCode is the OAuth error code of a token endpoint failure.
func oauthErrorCode(t *testing.T, err error) string {
	t.Helper()
	var re *oauth2.RetrieveError
	require.ErrorAs(t, err, &re)
	return re.ErrorCode
}
