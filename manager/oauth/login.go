package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/browser"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// LoginRequest is one server to log in to.
type LoginRequest struct {
	Name string // as declared, for messages
	Key  string // its name key: which Store file
	// URL, Headers and SSE are the server's endpoint, as declared.
	URL     string
	Headers map[string]string
	SSE     bool
	Config  Config
	// Out receives the authorization URL and what happens. If nil,
	// nothing is shown, which leaves a user without a browser stuck.
	Out io.Writer
	// Browser is the list of browser commands, as $BROWSER. If empty,
	// xdg-open when it is on PATH; "none" opens nothing (the URL is only
	// shown).
	Browser string
	// Open, if set, is given the authorization URL instead of Out and the
	// browser: someone else shows it to the user (a gateway client that
	// can open URLs). It runs while the login waits for the redirect; an
	// error it returns ends the login with that error.
	Open func(ctx context.Context, authURL string) error
}

// DefaultLoginTimeout bounds a login whose context has no deadline: the
// user has that long to finish in the browser.
const DefaultLoginTimeout = 5 * time.Minute

// Login runs the authorization code flow for one server: it asks the
// server what protects it, registers the client unless it has credentials,
// shows the authorization URL and opens it in a browser, receives the
// redirect on a loopback listener, redeems the code and stores the grant.
// The server's connections use it from their next request.
func (k *Keeper) Login(ctx context.Context, req LoginRequest) error {
	if k.dirErr != nil {
		return k.dirErr
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultLoginTimeout)
		defer cancel()
	}
	out := req.Out
	if out == nil {
		out = io.Discard
	}
	src := k.Source(req.Key, req.Name, req.Config)
	recorded := src.challenge(req.URL)
	src.mu.Lock()
	prev := src.rec.clone()
	src.mu.Unlock()

	probeReq, probeResp, err := k.challenged(ctx, req, recorded)
	if err != nil {
		return err
	}
	issuer, resource, fromMetadata := k.discover(ctx, probeReq, probeResp)
	found := &discovery{issuer: issuer, resourceMetadata: fromMetadata}
	found.lookUp(ctx, k.client)
	old := prev.current()
	if g := prev.grantOf(issuer); g != nil {
		old = g
	}

	cb, err := listen(req.Config.RedirectPort)
	if err != nil {
		probeResp.Body.Close()
		return err
	}
	defer cb.close()
	var browsers opener
	defer browsers.wait()

	var got struct {
		cfg *oauth2.Config
		tok *oauth2.Token
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: cb.url,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{cb.url},
			TokenEndpointAuthMethod: "none",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			ClientName:              "mcpvisor",
		}},
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if !cb.expect(args.URL) {
				return nil, errors.New("the authorization URL has no state parameter")
			}
			if req.Open != nil {
				return handOver(ctx, cb, args.URL, req.Open)
			}
			fmt.Fprintf(out, "To log in to %s, open this URL in a browser:\n\n  %s\n\n", req.Name, args.URL)
			env := req.Browser
			if env == "" {
				env = os.Getenv("BROWSER")
			}
			browsers.open(ctx, args.URL, browser.Commands(env, args.URL, true)) // "none": no command
			fmt.Fprintf(out, "Waiting for the browser to come back to %s …\n", cb.url)
			return cb.wait(ctx)
		},
		ScopeFilter: func(discovered []string) []string {
			scopes := discovered
			if len(req.Config.Scopes) > 0 {
				scopes = req.Config.Scopes
			}
			if old != nil {
				scopes = union(scopes, union(old.Scopes, old.Pending))
			}
			return scopes
		},
		RequestRefreshToken: true,
		Client:              k.client,
		NewTokenSource: func(_ context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = c, t
			return oauth2.StaticTokenSource(t), nil
		},
	}
	switch {
	case req.Config.ClientID != "":
		// Credentials given in the declaration win over everything else.
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: req.Config.ClientID}
		if req.Config.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: req.Config.ClientSecret}
		}
	default:
		if req.Config.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: req.Config.ClientMetadataURL}
		}
		if g := prev.grantOf(issuer); g != nil && g.Registered && issuer != "" && !k.forgotten(ctx, g) {
			// Registered dynamically before: the same client logs in again
			// rather than a new one each time.
			cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: g.ClientID, Issuer: issuer}
			if g.ClientSecret != "" {
				cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: g.ClientSecret}
			}
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		probeResp.Body.Close()
		return err
	}
	if err := h.Authorize(ctx, probeReq, probeResp); err != nil {
		return found.explain(err)
	}
	if got.tok == nil {
		return errors.New("the authorization server gave no token")
	}

	g := &Grant{
		Issuer:   issuer,
		Resource: resource,
		ClientID: got.cfg.ClientID,
		AuthURL:  got.cfg.Endpoint.AuthURL,
		TokenURL: got.cfg.Endpoint.TokenURL,
		// The style x/oauth2 found to work, if it had to find out.
		AuthStyle: int(got.cfg.Endpoint.AuthStyle),
		Scopes:    got.cfg.Scopes,
		Token:     fromOAuth2(got.tok, k.now()),
	}
	if got.cfg.ClientID != req.Config.ClientID && got.cfg.ClientID != req.Config.ClientMetadataURL {
		g.Registered, g.ClientSecret = true, got.cfg.ClientSecret
	}
	rec := prev
	if rec == nil {
		rec = &Record{Grants: map[string]*Grant{}}
	}
	rec.Grants[issuer] = g
	rec.Current = issuer
	rec.Challenge = nil // answered
	if err := k.store.Save(req.Key, rec); err != nil {
		return err
	}
	src.land(rec, k.store.stamp(req.Key))
	fmt.Fprintf(out, "Logged in to %s (authorization server %s).\n", req.Name, issuer)
	return nil
}

// handOver gives authURL to open and waits for the redirect. If open fails
// (the user declined), its error ends the wait and is the login's.
func handOver(ctx context.Context, cb *callback, authURL string, open func(context.Context, string) error) (*auth.AuthorizationResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	opened := make(chan struct{})
	var openErr error // set before opened closes
	go func() {
		defer close(opened)
		if err := open(ctx, authURL); err != nil {
			openErr = err
			cancel(err)
		}
	}()
	res, err := cb.wait(ctx)
	cancel(nil) // the wait is over: a question still open is moot
	<-opened
	if err != nil && openErr != nil {
		return nil, openErr
	}
	return res, err
}

// forgotten reports whether the authorization server no longer knows g's
// dynamically registered client (it lost or expired the registration): it
// would show the user an error page instead of a consent, and only a new
// registration helps. It asks the token endpoint to redeem a code that
// cannot be good: a server refuses that with invalid_client when the
// client is what is wrong, else with invalid_grant. Any other outcome
// (the server cannot be reached, or answers something else) keeps the
// registration.
func (k *Keeper) forgotten(ctx context.Context, g *Grant) bool {
	cfg := &oauth2.Config{
		ClientID:     g.ClientID,
		ClientSecret: g.ClientSecret,
		Endpoint:     oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)},
	}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, k.client), 30*time.Second)
	defer cancel()
	_, err := cfg.Exchange(cctx, "mcpvisor-client-check")
	var re *oauth2.RetrieveError
	return errors.As(err, &re) && re.ErrorCode == "invalid_client"
}

// grantOf returns r's grant from issuer, or nil.
func (r *Record) grantOf(issuer string) *Grant {
	if r == nil {
		return nil
	}
	return r.Grants[issuer]
}

// probe sends the server a request without a token, to be told how to get
// one: a 401 with a Bearer challenge. It returns that request and answer.
func (k *Keeper) probe(ctx context.Context, req LoginRequest) (*http.Request, *http.Response, error) {
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var r *http.Request
	var err error
	if req.SSE {
		r, err = http.NewRequestWithContext(pctx, http.MethodGet, req.URL, nil)
		if err == nil {
			r.Header.Set("Accept", "text/event-stream")
		}
	} else {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcpvisor","version":"login"}}}`
		r, err = http.NewRequestWithContext(pctx, http.MethodPost, req.URL, strings.NewReader(body))
		if err == nil {
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
		}
	}
	if err != nil {
		return nil, nil, err
	}
	for name, v := range req.Headers {
		r.Header.Set(name, v)
	}
	resp, err := k.client.Transport.RoundTrip(r)
	if err != nil {
		return nil, nil, fmt.Errorf("asking the server how to log in: %w", redactURL(err))
	}
	if resp.StatusCode != http.StatusUnauthorized || bearer(resp.Header.Get("WWW-Authenticate")) == nil {
		discard(resp)
		return nil, nil, fmt.Errorf("the server answered %s without asking for an OAuth login: %w", resp.Status, ErrNotProtected)
	}
	// The answer's body is closed by whoever takes it (Authorize); the
	// request's context ends with this function, so keep the body whole
	// first.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return r.WithContext(ctx), resp, nil
}

// discover finds the issuer the server trusts, as the go-sdk will: the
// protected resource metadata the challenge names, else the well-known
// one, else (older servers) the server's origin. fromMetadata says
// whether a metadata document named it.
func (k *Keeper) discover(ctx context.Context, r *http.Request, resp *http.Response) (issuer, resource string, fromMetadata bool) {
	resource = r.URL.String()
	if issuer, resource, ok := trustedIssuer(ctx, k.client, r.URL, resp.Header.Get("WWW-Authenticate"), resource); ok {
		return issuer, resource, true
	}
	origin := *r.URL
	origin.Path, origin.RawQuery, origin.User = "", "", nil
	return origin.String(), resource, false
}

// redactURL drops the URL from a *url.Error: it may carry credentials
// or a query with a key.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
