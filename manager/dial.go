package manager

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/endpoint"
	"github.com/mcpvisor/mcpvisor/internal/proc"
	"github.com/mcpvisor/mcpvisor/internal/redact"
	"github.com/mcpvisor/mcpvisor/manager/ask"
	"github.com/mcpvisor/mcpvisor/manager/oauth"
)

// DialFunc opens the transport for one connection attempt of server. ctx
// lives as long as the connection: it ends when the attempt fails or the
// session is closed (the default HTTP transports end their requests with
// it). [Options.Dial] lets tests and embedders substitute their own (for
// example in-memory transports); the default spawns or dials per
// spec.Transport.
type DialFunc func(ctx context.Context, server string, spec Spec) (mcp.Transport, error)

// defaultDial spawns the process or prepares the HTTP transport of spec.
// For HTTP, ctx is the connection's lifetime: its requests are cancelled
// when ctx ends.
func (m *Manager) defaultDial(ctx context.Context, server string, spec Spec) (mcp.Transport, error) {
	switch spec.Transport {
	case TransportStdio:
		p, err := proc.Start(proc.Config{
			Server:  server,
			Command: spec.Command,
			Env:     spec.Env,
			Dir:     spec.Cwd,
			Grace:   m.opts.StopGrace,
			MaxLine: spec.MaxFrameBytes,
			Logger:  m.log,
			Secrets: redact.New(spec.Secrets),
		})
		if err != nil {
			return nil, err
		}
		return proc.NewTransport(p), nil
	case TransportSSE:
		client, url := m.httpClient(ctx, server, spec)
		return &mcp.SSEClientTransport{
			Endpoint:     url,
			HTTPClient:   client,
			MaxEventSize: spec.MaxFrameBytes,
		}, nil
	default:
		client, url := m.httpClient(ctx, server, spec)
		return &mcp.StreamableClientTransport{
			Endpoint:     url,
			HTTPClient:   client,
			MaxRetries:   1, // our backoff governs reconnection, not the SDK's
			MaxEventSize: spec.MaxFrameBytes,
		}, nil
	}
}

// httpClient returns the client of one connection to spec's server, whose
// requests end when life does, and the endpoint to give the SDK. Requests
// without a deadline of their own get the longer of the request and
// connect timeouts for their response headers. A server that logs in
// gets its access token on every request (see package oauth).
func (m *Manager) httpClient(life context.Context, server string, spec Spec) (*http.Client, string) {
	var base http.RoundTripper = m.http
	if src := m.authSource(server, spec); src != nil {
		base = src.Transport(spec.URL, base)
	}
	base = m.streams.transport(base)
	return endpoint.NewClient(life, base, endpoint.Config{
		URL:           spec.URL,
		Headers:       spec.Headers,
		HeaderTimeout: max(spec.Timeouts.Request, spec.Timeouts.Connect),
	})
}

// logsIn reports whether the server logs in with OAuth when it asks to:
// an http or sse server, unless its declaration gives an Authorization
// header (those credentials are the user's, and never replaced).
func (s Spec) logsIn() bool {
	if s.Transport != TransportHTTP && s.Transport != TransportSSE {
		return false
	}
	for k := range s.Headers {
		if strings.EqualFold(k, "Authorization") {
			return false
		}
	}
	return true
}

// authSource is the login state of server, or nil if it does not log in.
func (m *Manager) authSource(server string, spec Spec) *oauth.Source {
	if !spec.logsIn() {
		return nil
	}
	return m.auth.Source(NameKey(server), server, spec.Auth)
}

// LoginOptions configures [Manager.Login].
type LoginOptions struct {
	// Out receives the authorization URL to open and what happens. If
	// nil, nothing is shown.
	Out io.Writer
	// Browser is the list of browser commands, as $BROWSER (which is used
	// if empty); "none" only shows the URL.
	Browser string
	// Open, if set, is given the authorization URL to show the user
	// instead of Out and the browser, while the login waits for the
	// browser to come back; an error it returns (the user declined) ends
	// the login with it.
	Open func(ctx context.Context, authURL string) error
}

// Login runs the OAuth authorization code flow for server (see package
// oauth): it shows the authorization URL, opens it in a browser, waits for
// the redirect, keeps the tokens and reconnects the server with them. It
// returns once the server is connected, or with why not; ctx bounds the
// whole (if it has no deadline, the login alone gets
// oauth.DefaultLoginTimeout).
func (m *Manager) Login(ctx context.Context, server string, opts LoginOptions) error {
	s, err := m.lookup(server, "login")
	if err != nil {
		return err
	}
	if !s.spec.logsIn() {
		why := "only http and sse servers log in"
		if s.spec.Transport == TransportHTTP || s.spec.Transport == TransportSSE {
			why = "it is given an Authorization header, which is used instead"
		}
		return errorf(CodeInvalidConfig, s.name, "login", "this server does not log in: %s", why)
	}
	s.loggingIn.Add(1)
	defer s.loggingIn.Add(-1)
	err = m.auth.Login(ctx, oauth.LoginRequest{
		Name: s.name, Key: NameKey(s.name), URL: s.spec.URL, Headers: s.spec.Headers,
		SSE: s.spec.Transport == TransportSSE, Config: s.spec.Auth, Out: opts.Out, Browser: opts.Browser, Open: opts.Open,
	})
	if err != nil {
		return newError(CodeConnectionFailed, s.name, "login", err)
	}
	if s.disabled.Load() {
		return nil // logged in; it connects when enabled
	}
	if err := m.Reconnect(s.name); err != nil {
		return err
	}
	if _, err := m.wait(ctx, s, StateConnected, s.refusedSinceReconnect); err != nil {
		return fmt.Errorf("logged in, but not connected: %w", err)
	}
	return nil
}

// refusedSinceReconnect is why a server whose attempt since the last
// Reconnect ended unauthorized refused the login (its handshake, or a
// call waiting for the login, needed scopes the login did not grant), or
// nil: a login waiting for the server to connect says so at once, rather
// than when its time runs out.
func (s *supervisor) refusedSinceReconnect(snap *snapshot) error {
	if snap.status.State != StateUnauthorized || s.stale(snap) {
		return nil
	}
	return errorf(CodeConnectionFailed, s.name, "login", "the server refused it: %w%s",
		ErrUnauthorized, lastErrorSuffix(snap.status)).with(snap.status.Remedy)
}

// loginByCaller runs the login that err (a call's failure) asks for through
// the client that made the call, when that client can open a URL: it is
// sent the authorization link (an elicitation/create in URL mode), and the
// call waits, within its own time, for the browser to come back and the
// server to connect; a login already under way (the host's, another
// client's) is waited for instead, for a session other than failed (the one
// the call was refused on, if any). It reports false, doing nothing, when
// err asks for no login or the call came from no such client: the login
// is then the host's, as err's remedy says. Otherwise it reports true,
// with nil once the server is connected with the login, or why not.
func (s *supervisor) loginByCaller(ctx context.Context, op string, opts CallOptions, err error, failed *mcp.ClientSession) (bool, error) {
	var e *Error
	if !errors.As(err, &e) || e.Remedy.Kind != RemedyLogin {
		return false, nil
	}
	a := opts.Answerer
	if u, ok := a.(ask.URLOpener); !ok || !u.OpensURLs() {
		return false, nil
	}
	home := s
	if s.home != nil {
		home = s.home
	}
	fail := func(what string, cause error) error {
		var le *Error
		if errors.As(cause, &le) && le.Server == home.name {
			cause = le.Err // said by Login, for the same server
		}
		return newError(CodeConnectionFailed, s.name, op, fmt.Errorf("the server needs a login, %s: %w", what, cause)).
			with(Remedy{Kind: RemedyLogin, Server: home.name})
	}
	if home.loggingIn.Load() > 0 || !home.linkSent.CompareAndSwap(false, true) {
		if cause := home.awaitLogin(ctx, failed); cause != nil {
			return true, fail("which is under way elsewhere and did not connect the server within the call", cause)
		}
		return true, nil
	}
	defer home.linkSent.Store(false)
	open := func(ctx context.Context, authURL string) error {
		res, err := a.Elicit(ctx, ask.From{Server: home.name, Client: opts.Client}, &mcp.ElicitParams{
			Mode:          "url",
			Message:       fmt.Sprintf("%s asks you to log in: open the link and authorize access; the call goes on once you have.", home.name),
			URL:           authURL,
			ElicitationID: rand.Text(),
		})
		switch {
		case err != nil:
			return fmt.Errorf("sending the login link: %w", err)
		case res.Action != "accept":
			return declinedError{action: res.Action}
		}
		return nil
	}
	if err := s.m.Login(ctx, home.name, LoginOptions{Open: open}); err != nil {
		return true, fail("whose link was sent to client "+opts.Client, err)
	}
	return true, nil
}

// Logout forgets server's OAuth tokens and client registration, here and
// in the state directory; its session ends and it waits for a login. It
// reports whether anything was stored.
func (m *Manager) Logout(server string) (bool, error) {
	s, err := m.lookup(server, "logout")
	if err != nil {
		return false, err
	}
	had, err := m.auth.Logout(NameKey(s.name), s.name)
	if err != nil {
		return had, newError(CodeInvalidConfig, s.name, "logout", err)
	}
	return had, nil
}

// errNoLogin is the cause of a connection ended because only a login helps.
var errNoLogin = errors.New("the server needs a login")
