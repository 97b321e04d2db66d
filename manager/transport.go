package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DialFunc opens the transport for one connection attempt of server. ctx
// lives as long as the connection: it ends when the attempt fails or the
// session is closed (the default HTTP transports end their requests with
// it). [Options.Dial] lets tests and embedders substitute their own (for
// example in-memory transports); the default spawns or dials per
// spec.Transport.
type DialFunc func(ctx context.Context, server string, spec Spec) (mcp.Transport, error)

// stdioTransport is the transport of one spawned process. Connect hands the
// SDK the process's pipes; closing the SDK's connection stops the process.
type stdioTransport struct {
	proc *process
	log  *slog.Logger
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	pipes := &mcp.IOTransport{
		Reader: t.proc.out,
		Writer: stdinWriter{t.proc},
		// The process's reader enforces the frame cap on each line, and says
		// so by size. The SDK's cap counts what its decoder buffers (up to one
		// pipe read past the frame): set higher, it stays a backstop for a
		// frame spread over many lines.
		MaxLineLength: t.proc.out.maxLine + 1<<20,
	}
	c, err := pipes.Connect(context.Background())
	if err != nil {
		return nil, err
	}
	return &stdioConn{Connection: c, proc: t.proc, log: t.log, pending: map[jsonrpc.ID]string{}}, nil
}

// stdioConn is the SDK's connection to a process, watched for what the SDK
// does not report: a read error that is the server's fault becomes a
// protocol error quoting the offending line, and responses that answer no
// request in flight (duplicate or unsolicited ids, which the SDK drops
// silently) are logged with the server's name.
type stdioConn struct {
	mcp.Connection
	proc *process
	log  *slog.Logger

	mu sync.Mutex
	// mu guards the following.
	pending   map[jsonrpc.ID]string // our requests awaiting a response: id → method
	cancelled []jsonrpc.ID          // recently cancelled ids, whose late answers are expected
	strays    int                   // responses that matched nothing
}

// maxCancelled bounds the cancelled ids remembered per connection.
const maxCancelled = 64

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		err = c.proc.out.explain(err)
		var pe protocolError
		if errors.As(err, &pe) {
			// The SDK ends the session with this error and fails the
			// requests in flight with it.
			return nil, streamBroken{pe}
		}
		return nil, err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.answered(resp.ID)
	}
	return msg, nil
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.sent(req)
	}
	return c.Connection.Write(ctx, msg)
}

// streamBroken is a protocol error as the requests in flight see it: their
// session ended under them, so they may or may not have run
// (ErrDisconnected).
type streamBroken struct{ protocolError }

func (e streamBroken) Error() string {
	return e.protocolError.Error() + "; the session ended: it may or may not have run"
}

func (e streamBroken) Is(target error) bool { return target == ErrDisconnected }

func (e streamBroken) Unwrap() error { return e.protocolError }

// farewellWait bounds how long Close may spend telling the server about
// requests still pending: a server that does not read its stdin must not
// hold up the close.
const farewellWait = 100 * time.Millisecond

// Close tells the server to stop working on requests of ours it never
// answered, then closes the connection (and with it the process). The SDK
// sends notifications/cancelled for a call it abandons, but from a
// goroutine of its own after the call has returned, and not at all once
// the session is closing: the calls a disposal abandons would otherwise
// keep running on a server that may outlive the close (FAULTS #28).
func (c *stdioConn) Close() error {
	c.mu.Lock()
	ids := make([]jsonrpc.ID, 0, len(c.pending))
	for id, method := range c.pending {
		if method != "initialize" { // which a client must not cancel (MCP lifecycle)
			ids = append(ids, id)
		}
	}
	clear(c.pending)
	c.mu.Unlock()
	if len(ids) > 0 && c.proc.exitError() == nil {
		_ = c.proc.stdin.SetWriteDeadline(time.Now().Add(farewellWait))
		ctx := context.Background()
		for _, id := range ids {
			params, err := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "the client closed the session"})
			if err != nil {
				break
			}
			if c.Connection.Write(ctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: params}) != nil {
				break
			}
		}
	}
	return c.Connection.Close()
}

// sent notes a request awaiting its response, or the cancellation of one.
func (c *stdioConn) sent(req *jsonrpc.Request) {
	switch {
	case req.ID.IsValid():
		c.mu.Lock()
		c.pending[req.ID] = req.Method
		c.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(req.Params, &p) != nil {
			return
		}
		id, err := jsonrpc.MakeID(p.RequestID)
		if err != nil {
			return
		}
		c.mu.Lock()
		if _, ok := c.pending[id]; ok {
			delete(c.pending, id)
			if len(c.cancelled) == maxCancelled {
				c.cancelled = c.cancelled[1:]
			}
			c.cancelled = append(c.cancelled, id)
		}
		c.mu.Unlock()
	}
}

// answered checks a response against the requests in flight.
func (c *stdioConn) answered(id jsonrpc.ID) {
	c.mu.Lock()
	if _, ok := c.pending[id]; ok {
		delete(c.pending, id)
		c.mu.Unlock()
		return
	}
	if i := slices.Index(c.cancelled, id); i >= 0 {
		c.cancelled = slices.Delete(c.cancelled, i, i+1) // a late answer: dropped, as it should be
		c.mu.Unlock()
		return
	}
	c.strays++
	n := c.strays
	c.mu.Unlock()
	if n&(n-1) == 0 { // 1, 2, 4, 8 …: a stream of them does not flood the log
		c.log.Warn("protocol error: response to no request in flight (duplicate or unsolicited id); dropped",
			"server", c.proc.server, "id", id.Raw(), "count", n)
	}
}

// Close stops and reaps the process; see process.Close.
func (t *stdioTransport) Close() error { return t.proc.Close() }

// endpointTransport is the RoundTripper of one HTTP server. It adds the
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
type endpointTransport struct {
	base     http.RoundTripper
	headers  map[string]string
	endpoint *url.URL      // as the SDK has it: no user, query or fragment
	user     *url.Userinfo // nil if none
	rawQuery string
	// headerTimeout bounds the wait for the response headers of a request
	// without a deadline: the longer of the request and connect timeouts.
	// A request with a deadline (every call: the call's timeout) is bound
	// by that alone, so that a server answering in JSON, whose headers come
	// with the result, is not cut off before the call's own timeout.
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

func newEndpointTransport(life context.Context, base http.RoundTripper, spec Spec) (endpointTransport, string) {
	t := endpointTransport{base: base, headers: spec.Headers, life: life, ended: newSignal(),
		headerTimeout: max(spec.Timeouts.Request, spec.Timeouts.Connect)}
	u, err := url.Parse(spec.URL)
	if err != nil { // validated before; keep going with what we have
		return t, spec.URL
	}
	t.user, t.rawQuery = u.User, u.RawQuery
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	t.endpoint = u
	return t, u.String()
}

func (t endpointTransport) RoundTrip(r *http.Request) (*http.Response, error) {
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
	return t.send(r)
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
func (t endpointTransport) send(r *http.Request) (*http.Response, error) {
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

// newHTTPTransport is the host's shared connection pool. It has no overall
// client timeout, which would cut long-lived SSE streams (NOTES.md), and no
// ResponseHeaderTimeout, which would cut a call whose timeout is longer
// when the server answers in JSON (headers come with the result): each
// request is bounded by its own deadline, or by endpointTransport's header
// timeout when it has none. Dial and TLS timeouts bound the rest.
func newHTTPTransport() *http.Transport {
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

// defaultDial spawns the process or prepares the HTTP transport of spec.
// For HTTP, ctx is the connection's lifetime: its requests are cancelled
// when ctx ends.
func (m *Manager) defaultDial(ctx context.Context, server string, spec Spec) (mcp.Transport, error) {
	switch spec.Transport {
	case TransportStdio:
		proc, err := startProcess(server, spec, m.opts.StopGrace, spec.MaxFrameBytes, m.log)
		if err != nil {
			return nil, err
		}
		return &stdioTransport{proc: proc, log: m.log}, nil
	case TransportSSE:
		client, endpoint := m.httpClient(ctx, spec)
		return &mcp.SSEClientTransport{
			Endpoint:     endpoint,
			HTTPClient:   client,
			MaxEventSize: spec.MaxFrameBytes,
		}, nil
	default:
		client, endpoint := m.httpClient(ctx, spec)
		return &mcp.StreamableClientTransport{
			Endpoint:     endpoint,
			HTTPClient:   client,
			MaxRetries:   1, // our backoff governs reconnection, not the SDK's
			MaxEventSize: spec.MaxFrameBytes,
		}, nil
	}
}

// httpClient returns the client of one connection to spec's server, whose
// requests end when life does, and the endpoint to give the SDK (see
// endpointTransport).
func (m *Manager) httpClient(life context.Context, spec Spec) (*http.Client, string) {
	t, endpoint := newEndpointTransport(life, m.http, spec)
	return &http.Client{Transport: t}, endpoint
}

// discardLogger drops everything; the default when Options.Logger is nil.
var discardLogger = slog.New(slog.DiscardHandler)

// signal is a one-shot broadcast.
type signal struct {
	once sync.Once
	c    chan struct{}
}

func newSignal() *signal { return &signal{c: make(chan struct{})} }

// fire closes done's channel; later calls do nothing.
func (s *signal) fire() { s.once.Do(func() { close(s.c) }) }

func (s *signal) done() <-chan struct{} { return s.c }

// endSignal is the signal that fires when the session over t has ended:
// the HTTP session's DELETE for streamable HTTP through our own transport,
// otherwise a new one that only serve's watch of Wait fires.
func endSignal(t mcp.Transport) *signal {
	if st, ok := t.(*mcp.StreamableClientTransport); ok && st.HTTPClient != nil {
		if et, ok := st.HTTPClient.Transport.(endpointTransport); ok && et.ended != nil {
			return et.ended
		}
	}
	return newSignal()
}
