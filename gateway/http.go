package gateway

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxBodyBytes bounds one HTTP request body.
const DefaultMaxBodyBytes = 4 << 20

// DefaultSessionTimeout closes an HTTP client session that has sent
// nothing for this long (a client that vanished without a DELETE).
const DefaultSessionTimeout = 30 * time.Minute

// HTTPOptions configures the HTTP listener.
type HTTPOptions struct {
	// Addr is host:port to listen on, e.g. "127.0.0.1:8931".
	Addr string
	// Token, if set, is required as "Authorization: Bearer <token>" on
	// every request. Binding an address that is not loopback requires one.
	Token string
	// MaxBodyBytes bounds a request body; if zero, DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// SessionTimeout closes idle client sessions; if zero,
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// Ready answers /readyz: whether every server has had its first say.
	// If nil, /readyz answers as /healthz does.
	Ready func() bool
	// Control, if set, is served under /control/ behind the token (the
	// shell's `mcpvisor status --addr`).
	Control http.Handler
}

// TokenError says that an address needs a token.
type TokenError struct{ Addr string }

func (e *TokenError) Error() string {
	return fmt.Sprintf("refusing to serve on %s without a token: it is not a loopback address, so anyone who can reach it could use every server; "+
		"set MCPVISOR_TOKEN or pass --token-file FILE (clients then send \"Authorization: Bearer <token>\"), or bind 127.0.0.1", e.Addr)
}

// CheckAddr reports whether Listen would refuse addr with token: an
// address that is not loopback needs a token (*TokenError), and addr must
// be host:port.
func CheckAddr(addr, token string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--http %q: want host:port, e.g. 127.0.0.1:8931", addr)
	}
	if token == "" && !isLoopbackAddr(addr) {
		return &TokenError{Addr: addr}
	}
	return nil
}

// HTTPServer is a running HTTP listener of the gateway.
type HTTPServer struct {
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	err  error
}

// Listen binds opts.Addr and serves the gateway's endpoints on it:
//
//	/mcp, /servers/NAME/mcp, /toolsets/NAME/mcp   streamable HTTP
//	/sse, /servers/NAME/sse, /toolsets/NAME/sse   the legacy HTTP+SSE transport
//
// It refuses an address that is not loopback unless opts.Token is set.
func (g *Gateway) Listen(opts HTTPOptions) (*HTTPServer, error) {
	if err := CheckAddr(opts.Addr, opts.Token); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	s := &HTTPServer{ln: ln, done: make(chan struct{}),
		srv: &http.Server{Handler: g.Handler(opts), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

// Addr is the address the server listens on (with the port chosen when
// the given one was 0).
func (s *HTTPServer) Addr() string { return s.ln.Addr().String() }

// Close stops listening and ends the open requests, waiting up to ctx.
func (s *HTTPServer) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	if s.err != nil {
		return s.err
	}
	return err
}

// Handler is the gateway's HTTP handler (what Listen serves), for
// embedding in a server of one's own.
func (g *Gateway) Handler(opts HTTPOptions) http.Handler {
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	mux := http.NewServeMux()
	for _, route := range []struct {
		pattern string
		sel     selection
		sse     bool
	}{
		{"/mcp", everything, false},
		{"/sse", everything, true},
		{"/servers/{name}/mcp", oneServer, false},
		{"/servers/{name}/sse", oneServer, true},
		{"/toolsets/{name}/mcp", oneToolset, false},
		{"/toolsets/{name}/sse", oneToolset, true},
	} {
		mux.Handle(route.pattern, g.endpointHandler(route.sel, route.sse, opts))
	}
	if opts.Control != nil {
		mux.Handle("/control/", opts.Control)
	}
	var h http.Handler = mux
	if opts.Token != "" {
		h = auth.RequireBearerToken(tokenVerifier(opts.Token), &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	h = withHealth(h, opts.Ready)
	return guard(h, opts.MaxBodyBytes)
}

func (g *Gateway) endpointHandler(sel selection, sse bool, opts HTTPOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		switch {
		case sel == oneServer && !g.currentView().hasServer(name):
			http.Error(w, fmt.Sprintf("no server %q; declared: %s", name, strings.Join(g.currentView().servers, ", ")), http.StatusNotFound)
			return
		case sel == oneToolset && g.toolset(name) == nil:
			http.Error(w, fmt.Sprintf("no toolset %q; declared: %s", name, strings.Join(g.Toolsets(), ", ")), http.StatusNotFound)
			return
		}
		ep, err := g.endpoint(sel, name)
		if err != nil {
			http.Error(w, "mcpvisor is shutting down", http.StatusServiceUnavailable)
			return
		}
		ep.handler(sse, opts).ServeHTTP(w, r)
	})
}

// handler is the endpoint's streamable HTTP or SSE handler, made once.
func (ep *endpoint) handler(sse bool, opts HTTPOptions) http.Handler {
	ep.httpOnce.Do(func() {
		get := func(*http.Request) *mcp.Server { return ep.srv }
		ep.streaming = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			MaxRequestBodyBytes: opts.MaxBodyBytes, SessionTimeout: opts.SessionTimeout})
		ep.sse = mcp.NewSSEHandler(get, &mcp.SSEOptions{MaxRequestBodyBytes: opts.MaxBodyBytes})
	})
	if sse {
		return ep.sse
	}
	return ep.streaming
}

// guard rejects requests from web pages of other origins (a browser's
// cross-site request to a local server, or DNS rebinding) and bounds
// request bodies.
func guard(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, r.Host) {
			http.Error(w, fmt.Sprintf("origin %q is not allowed: only local pages may use mcpvisor", o), http.StatusForbidden)
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		}
		next.ServeHTTP(w, r)
	})
}

// originAllowed accepts a loopback origin and the server's own.
func originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if isLoopbackHost(u.Hostname()) {
		return true
	}
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	return strings.EqualFold(u.Hostname(), h)
}

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopbackHost(host)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenVerifier accepts exactly token, compared in constant time.
func tokenVerifier(token string) auth.TokenVerifier {
	return func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			return nil, fmt.Errorf("%w: wrong bearer token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{}, nil
	}
}
