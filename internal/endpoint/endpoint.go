package endpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config describes one server's endpoint.
type Config struct {
	// URL is the endpoint as declared; it may carry credentials and a query.
	URL string
	// Headers are added to every request.
	Headers map[string]string
	// HeaderTimeout bounds the wait for the response headers of a request
	// that has no deadline of its own. If zero, there is no bound.
	HeaderTimeout time.Duration
}

// ErrTimeout is in the chain of the error of a request whose response
// headers did not come within Config.HeaderTimeout.
var ErrTimeout = errors.New("timeout")

// NewClient returns the HTTP client of one connection to cfg's server,
// sending through base, whose requests end when life does, and the
// endpoint to give the SDK: without credentials and query (see transport).
func NewClient(life context.Context, base http.RoundTripper, cfg Config) (*http.Client, string) {
	t, endpoint := newTransport(life, base, cfg)
	return &http.Client{Transport: t}, endpoint
}

// Ended returns a channel closed when the SDK gives up the streamable HTTP
// session over t (it sends the DELETE that ends it), or nil when t is not
// a streamable transport made with NewClient.
func Ended(t mcp.Transport) <-chan struct{} {
	if st, ok := t.(*mcp.StreamableClientTransport); ok && st.HTTPClient != nil {
		if et, ok := st.HTTPClient.Transport.(transport); ok && et.ended != nil {
			return et.ended.done()
		}
	}
	return nil
}

// transport is the RoundTripper of one HTTP server. It adds the
// spec's headers to every request, and gives back what the SDK is never
// shown: the SDK gets the endpoint without credentials and query, because
// the errors it and net/http format quote the request URL (`Post
// "http://u:***@host/mcp?token=…": …`), and those errors end up in logs,
// events and the REPL. The query goes back on requests to the endpoint
// itself (legacy SSE posts to a session URL with its own query, as it
// would anyway); the credentials become basic auth for the endpoint's host,
// as net/http would make them.
//
// It also bounds the wait for response headers of requests that have no
// deadline of their own (see headerTimeout).
type transport struct {
	base     http.RoundTripper
	headers  map[string]string
	endpoint *url.URL      // as the SDK has it: no user, query or fragment
	user     *url.Userinfo // nil if none
	rawQuery string
	// headerTimeout bounds the wait for the response headers of a request
	// without a deadline. A request with a deadline (every call: the
	// call's timeout) is bound by that alone, so that a server answering
	// in JSON, whose headers come with the result, is not cut off before
	// the call's own timeout.
	headerTimeout time.Duration
	// ended fires when the SDK sends the DELETE that ends the HTTP
	// session: the first sign that it gave the session up (a stream or a
	// request failed), while its Wait returns only once that DELETE is
	// answered, which a server may hold until its handlers finish.
	ended *signal
	// life is the connection's context: when it ends, its requests end
	// too. The SDK sends some requests on contexts of its own (the
	// notifications/cancelled of an abandoned initialize, 5s), which would
	// otherwise outlive the attempt (go-sdk #1189).
	life context.Context
}

func newTransport(life context.Context, base http.RoundTripper, cfg Config) (transport, string) {
	t := transport{base: base, headers: cfg.Headers, life: life, ended: newSignal(), headerTimeout: cfg.HeaderTimeout}
	u, err := url.Parse(cfg.URL)
	if err != nil { // validated before; keep going with what we have
		return t, cfg.URL
	}
	t.user, t.rawQuery = u.User, u.RawQuery
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	t.endpoint = u
	return t, u.String()
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete && t.ended != nil {
		t.ended.fire()
	}
	sameHost := t.endpoint != nil && r.URL.Scheme == t.endpoint.Scheme && r.URL.Host == t.endpoint.Host
	query := sameHost && t.rawQuery != "" && r.URL.RawQuery == "" && r.URL.Path == t.endpoint.Path
	auth := sameHost && t.user != nil && r.Header.Get("Authorization") == ""
	if len(t.headers) > 0 || query || auth {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
		if query {
			r.URL.RawQuery = t.rawQuery
		}
		if auth {
			pw, _ := t.user.Password()
			r.SetBasicAuth(t.user.Username(), pw)
		}
	}
	resp, err := t.send(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, &UnauthorizedError{Challenge: resp.Header.Get("WWW-Authenticate")}
	}
	return resp, err
}

// UnauthorizedError is a 401 answer: the server wants credentials this
// connection does not have (or no longer valid ones). Retrying without new
// ones only hammers the server.
type UnauthorizedError struct {
	// Challenge is the WWW-Authenticate header, which names the scheme
	// and where to get a token; it holds no secret of ours.
	Challenge string
}

// ErrUnauthorized is in the chain of every [UnauthorizedError]: the
// server refused the request for want of credentials.
var ErrUnauthorized = errors.New("unauthorized")

// Is makes errors.Is(err, ErrUnauthorized) hold.
func (e *UnauthorizedError) Is(target error) bool { return target == ErrUnauthorized }

func (e *UnauthorizedError) Error() string {
	if e.Challenge == "" {
		return "401 Unauthorized: the server requires authorization"
	}
	return "401 Unauthorized: the server requires authorization (WWW-Authenticate: " + e.Challenge + ")"
}

// Causes given to a request's context.
var (
	errNoHeaders      = errors.New("no response headers in time")
	errConnectionDone = errors.New("the connection is closed")
)

// send runs r for as long as the connection lives at most, and, when r has
// no deadline of its own, gives it headerTimeout for its response headers.
// The body, once there, may take as long as it takes (an SSE stream); the
// request's context is released when the body is closed.
func (t transport) send(r *http.Request) (*http.Response, error) {
	_, hasDeadline := r.Context().Deadline()
	bound := !hasDeadline && t.headerTimeout > 0
	if t.life == nil && !bound {
		return t.base.RoundTrip(r)
	}
	if t.life != nil && t.life.Err() != nil {
		return nil, errConnectionDone
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	release := func() { cancel(nil) }
	if t.life != nil {
		stop := context.AfterFunc(t.life, func() { cancel(errConnectionDone) })
		release = func() { stop(); cancel(nil) }
	}
	var timer *time.Timer
	if bound {
		timer = time.AfterFunc(t.headerTimeout, func() { cancel(errNoHeaders) })
	}
	resp, err := t.base.RoundTrip(r.WithContext(ctx))
	if timer != nil && !timer.Stop() { // fired: even headers that made it are too late
		if err == nil {
			resp.Body.Close()
		}
		release()
		return nil, headerTimeoutError{t.headerTimeout}
	}
	if err != nil {
		release()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: release}
	return resp, nil
}

// headerTimeoutError is a response whose headers did not come in time. It
// is one of our timeouts (ErrTimeout).
type headerTimeoutError struct{ after time.Duration }

func (e headerTimeoutError) Error() string {
	return fmt.Sprintf("no response headers within %s", e.after)
}

func (e headerTimeoutError) Is(target error) bool { return target == ErrTimeout }

// cancelOnClose releases a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// NewPool is the host's shared connection pool. It has no overall
// client timeout, which would cut long-lived SSE streams, and no
// ResponseHeaderTimeout, which would cut a call whose timeout is longer
// when the server answers in JSON (headers come with the result): each
// request is bounded by its own deadline, or by transport's header
// timeout when it has none. Dial and TLS timeouts bound the rest.
func NewPool() *http.Transport {
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
}

// signal is a one-shot broadcast.
type signal struct {
	once sync.Once
	c    chan struct{}
}

func newSignal() *signal { return &signal{c: make(chan struct{})} }

// fire closes done's channel; later calls do nothing.
func (s *signal) fire() { s.once.Do(func() { close(s.c) }) }

func (s *signal) done() <-chan struct{} { return s.c }
