package oauthtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// AuthorizationError is an error redirect from the authorization server
// (RFC 6749 section 4.1.2.1), such as access_denied.
type AuthorizationError struct {
	Code        string
	Description string
}

func (e *AuthorizationError) Error() string {
	return fmt.Sprintf("oauthtest: authorization failed: %s: %s", e.Code, e.Description)
}

// Callback is a client's loopback redirect listener, for tests that drive
// the go-sdk's auth.AuthorizationCodeHandler directly: register [Callback.URL] as
// the redirect URI and use [Callback.Fetcher] as its
// AuthorizationCodeFetcher.
type Callback struct {
	srv     *httptest.Server
	results chan url.Values
}

// NewCallback starts a listener on 127.0.0.1 and closes it when t ends.
func NewCallback(t testing.TB) *Callback {
	t.Helper()
	c := &Callback{results: make(chan url.Values, 16)}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

// URL is the redirect URI: "http://127.0.0.1:PORT/callback".
func (c *Callback) URL() string { return c.srv.URL + "/callback" }

func (c *Callback) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	select {
	case c.results <- r.URL.Query():
	case <-r.Context().Done():
		return
	}
	// The page says how it went; the status is 200 either way, so that
	// a failed login is told apart from a listener that is not there.
	if r.URL.Query().Has("error") {
		fmt.Fprintln(w, "Login failed. You can close this window.")
		return
	}
	fmt.Fprintln(w, "Login complete. You can close this window.")
}

// Fetcher returns an AuthorizationCodeFetcher that opens the authorization
// URL with open (such as [Browse], or a function that runs the
// [BrowserScript]) and waits for the redirect to arrive. open may return
// before it has followed the URL, as browser launchers do. An error redirect
// comes back as an [*AuthorizationError].
func (c *Callback) Fetcher(open func(ctx context.Context, authURL string) error) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		if err := open(ctx, args.URL); err != nil {
			return nil, err
		}
		select {
		case q := <-c.results:
			if q.Has("error") {
				return nil, &AuthorizationError{Code: q.Get("error"), Description: q.Get("error_description")}
			}
			return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
