package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Defaults of HTTPOptions.
const (
	// DefaultMaxBodyBytes bounds one HTTP request body.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultSessionTimeout closes an HTTP client session that has sent
	// nothing for this long (a client that vanished without a DELETE).
	DefaultSessionTimeout = 10 * time.Minute
	// DefaultBodyTimeout bounds reading one request body.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a kept-alive connection idle this long.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConns caps the open connections.
	DefaultMaxConns = 2048
	// DefaultMaxUnauthConns caps the connections not yet authenticated.
	DefaultMaxUnauthConns = 128
)

// readHeaderTimeout bounds reading a request's headers.
const readHeaderTimeout = 10 * time.Second

// HTTPOptions configures the HTTP listener.
type HTTPOptions struct {
	// Addr is host:port to listen on, e.g. "127.0.0.1:8931".
	Addr string
	// Token, if set, is required as "Authorization: Bearer <token>" on
	// every request. Binding an address that is not loopback requires one
	// of at least MinTokenBits (see CheckAddr).
	Token string
	// MaxBodyBytes bounds a request body; if zero, DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// SessionTimeout closes a client session that sends no request for
	// this long (one with a request in flight is never idle); if zero,
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// BodyTimeout bounds reading a request's body; if zero,
	// DefaultBodyTimeout.
	BodyTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no new
	// request for this long; if zero, DefaultIdleTimeout. (Listen only.)
	IdleTimeout time.Duration
	// MaxConns caps the open connections, and MaxUnauthConns those none of
	// whose requests has passed the checks (Host, Origin, token) yet: a
	// connection beyond either is answered 503 and closed. If zero,
	// DefaultMaxConns and DefaultMaxUnauthConns. (Listen only.)
	MaxConns, MaxUnauthConns int
	// Ready answers /readyz: whether every server has had its first say.
	// If nil, /readyz answers as /healthz does.
	Ready func() bool
	// Control, if set, is served under /control/ behind the token (the
	// shell's `mcpvisor status --addr`).
	Control http.Handler
	// Console, if set, is served at /ui and under /ui/ (the web console).
	// It passes the Host and Origin checks but not the token check: a
	// browser cannot send a bearer header, so the console asks for the
	// token itself and keeps the login in a cookie.
	Console http.Handler
}

// withDefaults fills in the zero fields.
func (o HTTPOptions) withDefaults() HTTPOptions {
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.BodyTimeout == 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxUnauthConns == 0 {
		o.MaxUnauthConns = DefaultMaxUnauthConns
	}
	return o
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
// It refuses an address that is not loopback unless opts.Token is set,
// and strong enough (CheckAddr).
func (g *Gateway) Listen(opts HTTPOptions) (*HTTPServer, error) {
	if err := CheckAddr(opts.Addr, opts.Token); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", opts.Addr, err)
	}
	lim := newConnLimiter(ln, opts.MaxConns, opts.MaxUnauthConns)
	s := &HTTPServer{ln: lim, done: make(chan struct{}),
		srv: &http.Server{Handler: g.Handler(opts), ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: opts.IdleTimeout,
			ConnContext: lim.connContext}}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(lim); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

// Addr is the address the server listens on (with the port chosen when
// the given one was 0).
func (s *HTTPServer) Addr() string { return s.ln.Addr().String() }

// Close stops listening at once and waits up to ctx for the open requests
// to end, then ends those left. To let calls in flight finish, run it
// beside Gateway.Shutdown, which ends the sessions' long-lived streams.
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
	opts = opts.withDefaults()
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
	var next http.Handler = g.requireToken(mux, opts.Token)
	if opts.Console != nil {
		top := http.NewServeMux()
		top.Handle("/", next)
		top.Handle("/ui", opts.Console)
		top.Handle("/ui/", opts.Console)
		next = top
	}
	return guard(crossOrigin(withHealth(next, opts.Ready)), opts)
}

// endpointHandler serves one kind of endpoint. Only requests that passed
// the guard reach it, so an unknown name may be answered with the names
// there are.
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
		timeout := opts.SessionTimeout
		ep.g.holderIdle.Store(int64(timeout))
		if ep.g.fast {
			// The fast path serves calls the go-sdk never sees, so the
			// gateway times idle sessions out itself (session.serving).
			ep.g.sessionTimeout.Store(int64(timeout))
			timeout = 0
		}
		stateful := ep.g.streamable(ep, mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
			MaxRequestBodyBytes: opts.MaxBodyBytes, SessionTimeout: timeout}))
		// The sessionless generation's request is its whole call: when
		// the client stops waiting, the handler is cancelled.
		var sessionless http.Handler = mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true,
			MaxRequestBodyBytes: opts.MaxBodyBytes, PropagateRequestCancellation: true})
		if ep.g.fast {
			sessionless = ep.fastless(sessionless)
		}
		ep.streaming = generations(stateful, sessionless)
		ep.sse = ep.g.sse(mcp.NewSSEHandler(get, &mcp.SSEOptions{MaxRequestBodyBytes: opts.MaxBodyBytes}))
	})
	if sse {
		return ep.sse
	}
	return ep.streaming
}

// guard checks every request before anything answers it: its body is
// bounded in size and in time (whatever happens to the request next), a
// loopback listener serves only requests addressed to a loopback name
// (DNS rebinding). Web pages of other sites are refused by crossOrigin.
func guard(next http.Handler, opts HTTPOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = newTimedBody(w, http.MaxBytesReader(w, r.Body, opts.MaxBodyBytes), opts.BodyTimeout)
		}
		if !hostAllowed(r) {
			http.Error(w, fmt.Sprintf("Host %q is not allowed: mcpvisor listens on loopback and serves only requests addressed to a loopback name", r.Host), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireToken lets through to next only requests with the token, when
// one is set (see authGate); the connection of one let through counts as
// authenticated from then on.
func (g *Gateway) requireToken(next http.Handler, token string) http.Handler {
	var gate *authGate
	if token != "" {
		gate = newAuthGate(token, g.log)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate != nil && !gate.check(w, r) {
			return
		}
		authenticated(r)
		next.ServeHTTP(w, r)
	})
}

// timedBody is a request body that must arrive within a deadline: a
// client that drips it is cut off. Once it has been read to its end the
// deadline is lifted, as the connection then waits for the answer (the
// server reads in the background to notice a client leaving), which may
// take long. After an error it stays: what is left of the body is then
// discarded under it.
type timedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	read bool // to the end
}

func newTimedBody(w http.ResponseWriter, body io.ReadCloser, timeout time.Duration) io.ReadCloser {
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return body // not a connection of net/http's: nothing to bound
	}
	return &timedBody{ReadCloser: body, rc: rc}
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.read {
		b.read = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// hostAllowed reports whether r may be served as far as its Host goes: on
// a loopback listener only a loopback name is (a page whose own name was
// made to resolve to 127.0.0.1 sends that name). The go-sdk checks the
// same, but only once a request reaches an endpoint's session.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || !isLoopbackLocal(local) {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return isLoopbackHost(strings.Trim(host, "[]"))
}

// crossOrigin refuses what a web page of another site asks of the gateway
// through a visitor's browser: net/http's CrossOriginProtection, which
// judges a request by its Sec-Fetch-Site header, or by its Origin against
// its Host. A page served from this machine (a loopback origin, any port)
// is let through, as any local program could call the gateway anyway.
//
// This does not stop DNS rebinding: to the browser a rebound page is the
// gateway's own origin. The Host check does (localHost).
func crossOrigin(next http.Handler) http.Handler {
	p := http.NewCrossOriginProtection()
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("origin %q is not allowed: only local pages may use mcpvisor", r.Header.Get("Origin")), http.StatusForbidden)
	}))
	protected := p.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" { // what programs other than browsers send: none
			if u, err := url.Parse(origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") && isLoopbackHost(u.Hostname()) {
				next.ServeHTTP(w, r)
				return
			}
		}
		protected.ServeHTTP(w, r)
	})
}

// isLoopbackLocal reports whether a listener's address is a loopback
// one, as isLoopbackAddr reads its text, without writing the text out.
func isLoopbackLocal(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.Zone == "" && t.IP.IsLoopback()
	}
	return isLoopbackAddr(a.String())
}

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && isLoopbackHost(host)
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host) // what net.ParseIP reads, and zones, which it refuses
	return err == nil && ip.Zone() == "" && ip.IsLoopback()
}
