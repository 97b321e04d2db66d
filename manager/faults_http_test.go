package manager_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// HTTP and SSE faults, against real servers on loopback: the go-sdk's own
// handlers serving the demo server, behind a middleware that injects the
// fault (httpFault). fakemcp speaks stdio only.

// httpFault is the middleware's configuration. The zero value injects
// nothing.
type httpFault struct {
	// only, if set, limits the fault to POSTs of the JSON-RPC methods it
	// accepts; every > 1 then limits it to every every-th of those.
	only  func(method string) bool
	every int

	// status answers with this status instead of serving.
	status int
	// contentType replaces the Content-Type of POST responses.
	contentType string
	// slowHeaders holds POSTs this long before any byte of the response
	// (or until the client gives up).
	slowHeaders time.Duration
	// noEndpointEvent answers an SSE GET with an event stream that never
	// sends the endpoint event.
	noEndpointEvent bool
	// inspect, if set, sees every request first.
	inspect func(*http.Request)
}

// methods returns an httpFault.only accepting the given methods.
func methods(names ...string) func(string) bool {
	return func(m string) bool { return slices.Contains(names, m) }
}

// faultServer is an MCP server on 127.0.0.1 with a fault in front.
type faultServer struct {
	URL      string // the MCP endpoint (/mcp, or /sse for legacy SSE)
	requests atomic.Int64
	posts    atomic.Int64
	matched  atomic.Int64 // POSTs a fault applies to (before every)

	srv  *httptest.Server
	mcp  *mcp.Server
	stop chan struct{} // releases handlers held by a fault
	once sync.Once
}

// startFaultServer serves the demo server over transport (http or sse)
// with fault injected. It is stopped, with every session on it, when the
// test ends.
func startFaultServer(t *testing.T, transport manager.Transport, fault httpFault) *faultServer {
	t.Helper()
	fs := &faultServer{mcp: demo.NewServer(), stop: make(chan struct{})}
	getServer := func(*http.Request) *mcp.Server { return fs.mcp }
	var handler http.Handler
	path := "/mcp"
	if transport == manager.TransportSSE {
		handler, path = mcp.NewSSEHandler(getServer, nil), "/sse"
	} else {
		handler = mcp.NewStreamableHTTPHandler(getServer, nil)
	}
	mux := http.NewServeMux()
	mux.Handle(path, fs.middleware(fault, handler))
	fs.srv = httptest.NewServer(mux)
	fs.URL = fs.srv.URL + path
	t.Cleanup(fs.Close)
	return fs
}

// Close stops the server: held handlers are released, then every session
// the MCP server still has is closed (a client that never finished its
// handshake does not say goodbye).
func (fs *faultServer) Close() {
	fs.once.Do(func() {
		close(fs.stop)
		fs.srv.CloseClientConnections()
		fs.srv.Close()
		for ss := range fs.mcp.Sessions() {
			_ = ss.Close()
		}
	})
}

func (fs *faultServer) middleware(f httpFault, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.requests.Add(1)
		if f.inspect != nil {
			f.inspect(r)
		}
		if f.noEndpointEvent && r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			fs.hold(r, 0)
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		fs.posts.Add(1)
		if f.only != nil && !f.only(jsonrpcMethod(r)) {
			next.ServeHTTP(w, r)
			return
		}
		if n := fs.matched.Add(1); f.every > 1 && n%int64(f.every) != 0 {
			next.ServeHTTP(w, r)
			return
		}
		if f.slowHeaders > 0 && !fs.hold(r, f.slowHeaders) {
			return
		}
		if f.status != 0 {
			http.Error(w, http.StatusText(f.status), f.status)
			return
		}
		if f.contentType != "" {
			w = &contentTypeWriter{ResponseWriter: w, contentType: f.contentType}
		}
		next.ServeHTTP(w, r)
	})
}

// jsonrpcMethod peeks at the method of a POSTed JSON-RPC message, leaving
// the body readable.
func jsonrpcMethod(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	body, err := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

// hold blocks a handler for d (0: for good) or until the client goes away
// or the server stops. It reports whether d passed.
func (fs *faultServer) hold(r *http.Request, d time.Duration) bool {
	var timeout <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
		return true
	case <-r.Context().Done():
	case <-fs.stop:
	}
	return false
}

// contentTypeWriter replaces the Content-Type of a response.
type contentTypeWriter struct {
	http.ResponseWriter
	contentType string
	wrote       bool
}

func (w *contentTypeWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.Header().Set("Content-Type", w.contentType)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *contentTypeWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *contentTypeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// refusedURL returns an http URL on loopback where nothing listens.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr
}

// blackhole returns the address of a listener that never accepts: the
// kernel completes handshakes into its backlog, and nothing ever answers.
func blackhole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

// faultHTTPSpec declares a server at url.
func faultHTTPSpec(t *testing.T, url string, transport manager.Transport, extra map[string]any) manager.Spec {
	t.Helper()
	raw := quick(extra)
	raw["url"] = url
	if transport == manager.TransportSSE {
		raw["transport"] = "sse"
	}
	return decode(t, raw)
}

// The happy path through the fault server with no fault: both transports
// connect and serve calls, and the invariants hold.
func TestFaultHTTPBaseline(t *testing.T) {
	for _, tr := range []manager.Transport{manager.TransportHTTP, manager.TransportSSE} {
		t.Run(string(tr), func(t *testing.T) {
			f := faultManager(t, manager.Options{})
			fs := startFaultServer(t, tr, httpFault{})
			require.NoError(t, f.m.Add("x", faultHTTPSpec(t, fs.URL, tr, nil)))
			f.until("x", events.KindConnected, patience)
			f.echoOK("x.echo", "over "+string(tr))
		})
	}
}

// A server that is down (connection refused) is retried on the backoff
// schedule; its errors say "connection refused at host:port", without
// credentials or query. A 503
// storm fails the attempts it hits.
func TestHTTPServerDown(t *testing.T) {
	const secret, token = "s3cr3t-pw", "t0k3n-hunter2"
	for _, tr := range []manager.Transport{manager.TransportHTTP, manager.TransportSSE} {
		t.Run(string(tr)+"/refused", func(t *testing.T) {
			f := faultManager(t, manager.Options{})
			base := refusedURL(t)
			url := strings.Replace(base, "http://", "http://user:"+secret+"@", 1) + "/mcp?token=" + token
			require.NoError(t, f.m.Add("x", faultHTTPSpec(t, url, tr, map[string]any{"max_retries": 2})))
			evs := lifecycle(f.until("x", events.KindFailed, patience))
			var delays []int64
			for _, e := range only(evs, events.KindBackoff) {
				delays = append(delays, e.Fields["delay_ms"].(int64))
				msg := e.Fields["error"].(string)
				// Where, in the server's own words, without the layers
				// that passed it on.
				require.Regexp(t, `^server "x": \S+: connection refused at `+regexp.QuoteMeta(strings.TrimPrefix(base, "http://"))+
					` \(is the server running, and on that port\?\)$`, msg)
				require.NotContains(t, msg, secret)
				require.NotContains(t, msg, token)
			}
			require.Equal(t, []int64{10, 20}, delays)
			st := mustStatus(t, f.m, "x")
			require.Equal(t, base+"/mcp", st.Endpoint)
			for _, s := range []string{st.LastError, evs[len(evs)-1].Fields["error"].(string)} {
				require.NotContains(t, s, secret)
				require.NotContains(t, s, token)
			}
			_, err := f.call("x.echo", map[string]any{"text": "?"}, time.Second)
			requireFault(t, err, manager.ErrConnectionFailed, "x", `tools/call "echo"`)
			require.NotContains(t, err.Error(), secret)
			require.NotContains(t, err.Error(), token)
		})
	}
}

// Credentials and query of the declared URL still reach the server: what
// is kept out of errors is not kept off the wire.
func TestHTTPCredentialsStillSent(t *testing.T) {
	f := faultManager(t, manager.Options{})
	var seen struct {
		sync.Mutex
		user, pass, token string
	}
	fs := startFaultServer(t, manager.TransportHTTP, httpFault{inspect: func(r *http.Request) {
		u, p, _ := r.BasicAuth()
		seen.Lock()
		seen.user, seen.pass, seen.token = u, p, r.URL.Query().Get("token")
		seen.Unlock()
	}})
	url := strings.Replace(fs.URL, "http://", "http://user:pw@", 1) + "?token=abc"
	require.NoError(t, f.m.Add("x", faultHTTPSpec(t, url, manager.TransportHTTP, nil)))
	f.until("x", events.KindConnected, patience)
	f.echoOK("x.echo", "authenticated")
	seen.Lock()
	defer seen.Unlock()
	require.Equal(t, []string{"user", "pw", "abc"}, []string{seen.user, seen.pass, seen.token})
}

// A 5xx: a 503 on a POST. Pinned per transport: over streamable HTTP it
// fails that request only and the session continues; legacy SSE treats a
// failed POST as the end of the session and reconnects.
func TestHTTPServiceUnavailable(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		fs := startFaultServer(t, manager.TransportHTTP, httpFault{only: methods("tools/call"), every: 2, status: http.StatusServiceUnavailable})
		require.NoError(t, f.m.Add("x", faultHTTPSpec(t, fs.URL, manager.TransportHTTP, nil)))
		f.until("x", events.KindConnected, patience)
		for i := range 4 {
			msg := "call " + strconv.Itoa(i)
			got, err := f.call("x.echo", map[string]any{"text": msg}, patience)
			if i%2 == 0 {
				require.NoError(t, err)
				require.Equal(t, msg, got)
				continue
			}
			requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "echo"`)
			require.Contains(t, err.Error(), "Service Unavailable")
		}
		require.Equal(t, manager.StateConnected, mustStatus(t, f.m, "x").State)
	})
	t.Run("sse", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		fs := startFaultServer(t, manager.TransportSSE, httpFault{only: methods("tools/call"), every: 2, status: http.StatusServiceUnavailable})
		require.NoError(t, f.m.Add("x", faultHTTPSpec(t, fs.URL, manager.TransportSSE, nil)))
		f.until("x", events.KindConnected, patience)
		f.echoOK("x.echo", "first")
		_, err := f.call("x.echo", map[string]any{"text": "second"}, patience)
		requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "echo"`)
		require.Contains(t, err.Error(), "503 Service Unavailable")

		evs := lifecycle(f.until("x", events.KindConnected, patience))
		require.Equal(t, []events.Kind{events.KindDisconnected, events.KindBackoff, events.KindConnecting, events.KindConnected}, kinds(evs))
		require.Contains(t, evs[0].Fields["error"], "503 Service Unavailable")
		f.echoOK("x.echo", "third, on a new session")
	})
}

// A black-holed server (the kernel accepts the connection, nobody ever
// answers). Each attempt ends at the connect timeout as CONNECTION_TIMEOUT,
// and nothing of it (goroutines, sockets) outlives disposal, even though
// the SDK's own cleanup would wait longer (go-sdk #1189).
func TestHTTPBlackHoledServer(t *testing.T) {
	for _, tr := range []manager.Transport{manager.TransportHTTP, manager.TransportSSE} {
		t.Run(string(tr), func(t *testing.T) {
			f := faultManager(t, manager.Options{})
			url := "http://" + blackhole(t) + "/mcp"
			spec := faultHTTPSpec(t, url, tr, map[string]any{"timeouts": map[string]any{"connect": "300ms", "request": "5s"}, "max_retries": 1})
			require.NoError(t, f.m.Add("x", spec))

			evs := lifecycle(f.until("x", events.KindFailed, patience))
			require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindBackoff, events.KindConnecting, events.KindFailed}, kinds(evs))
			// Each attempt is over at the connect timeout: the error names
			// it, and it is not reported before.
			require.Equal(t, `server "x": initialize: timeout after 300ms`, evs[2].Fields["error"])
			require.GreaterOrEqual(t, evs[2].At, 300*ms)
			require.Contains(t, evs[4].Fields["error"], `server "x": initialize: timeout after 300ms`)
			require.GreaterOrEqual(t, evs[4].At-evs[3].At, 300*ms)

			_, err := f.call("x.echo", map[string]any{"text": "?"}, time.Second)
			requireFault(t, err, manager.ErrConnectionFailed, "x", `tools/call "echo"`)
			require.Contains(t, err.Error(), "initialize: timeout after 300ms")
		})
	}
}

// A server slow to send response headers. A call is bounded by its own
// timeout, and the session serves the next one; a call whose own timeout is
// longer than the server's request timeout is not cut short by a header
// limit (a JSON-answering server sends headers with the result).
func TestHTTPSlowHeaders(t *testing.T) {
	t.Run("held POST", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		fs := startFaultServer(t, manager.TransportHTTP, httpFault{only: methods("tools/call"), every: 2, slowHeaders: time.Minute})
		require.NoError(t, f.m.Add("x", faultHTTPSpec(t, fs.URL, manager.TransportHTTP, nil)))
		f.until("x", events.KindConnected, patience)

		f.echoOK("x.echo", "one")
		// Bounded by its own timeout (the error names it), not the
		// server's minute.
		_, err := f.call("x.echo", map[string]any{"text": "two"}, 300*ms)
		requireFault(t, err, manager.ErrInvocationFailed, "x", `tools/call "echo"`, manager.ErrTimeout)
		require.EqualError(t, err, `server "x": tools/call "echo": timeout after 300ms`)
		f.echoOK("x.echo", "three")
	})
	t.Run("headers with a late result", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		fs := startFaultServer(t, manager.TransportHTTP, httpFault{only: methods("tools/call"), slowHeaders: 600 * ms})
		spec := faultHTTPSpec(t, fs.URL, manager.TransportHTTP, map[string]any{"timeouts": map[string]any{"connect": "300ms", "request": "300ms"}})
		require.NoError(t, f.m.Add("x", spec))
		f.until("x", events.KindConnected, patience)
		got, err := f.call("x.echo", map[string]any{"text": "late"}, 3*time.Second)
		require.NoError(t, err, "the call's own 3s bounds it, not the 300ms request default")
		require.Equal(t, "late", got)
	})
}

// A broken handshake over HTTP fails the attempt, never hangs, and leaves
// nothing behind: legacy SSE without an endpoint event fails at the connect
// timeout; a streamable server answering initialize as text/plain fails at
// once with a protocol error.
func TestHTTPBrokenHandshake(t *testing.T) {
	t.Run("sse without endpoint event", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		fs := startFaultServer(t, manager.TransportSSE, httpFault{noEndpointEvent: true})
		spec := faultHTTPSpec(t, fs.URL, manager.TransportSSE, map[string]any{"timeouts": map[string]any{"connect": "300ms"}, "max_retries": 0})
		require.NoError(t, f.m.Add("x", spec))
		evs := lifecycle(f.until("x", events.KindFailed, patience))
		require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindFailed}, kinds(evs))
		require.Equal(t, `gave up after 1 attempt: server "x": initialize: timeout after 300ms`, evs[2].Fields["error"])
		require.GreaterOrEqual(t, evs[2].At, 300*ms)
	})
	t.Run("streamable initialize as text/plain", func(t *testing.T) {
		f := faultManager(t, manager.Options{})
		fs := startFaultServer(t, manager.TransportHTTP, httpFault{only: methods("initialize"), contentType: "text/plain"})
		// With a connect timeout of an hour, failing within patience is
		// failing fast.
		spec := faultHTTPSpec(t, fs.URL, manager.TransportHTTP, map[string]any{"max_retries": 0, "timeouts": map[string]any{"connect": "1h"}})
		require.NoError(t, f.m.Add("x", spec))
		evs := lifecycle(f.until("x", events.KindFailed, patience))
		require.Equal(t, []events.Kind{events.KindAdded, events.KindConnecting, events.KindFailed}, kinds(evs))
		msg := evs[2].Fields["error"].(string)
		require.True(t, strings.HasPrefix(msg, `gave up after 1 attempt: server "x": initialize: `), msg)
		require.Contains(t, msg, "text/plain")
	})
}
