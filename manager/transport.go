package manager

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DialFunc opens the transport for one connection attempt of server.
// [Options.Dial] lets tests and embedders substitute their own (for example
// in-memory transports); the default spawns or dials per spec.Transport.
type DialFunc func(ctx context.Context, server string, spec Spec) (mcp.Transport, error)

// stdioTransport is the transport of one spawned process. Connect hands the
// SDK the process's pipes; closing the SDK's connection stops the process.
type stdioTransport struct {
	proc    *process
	maxLine int
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	io := &mcp.IOTransport{
		Reader:        stdoutReader{t.proc},
		Writer:        stdinWriter{t.proc},
		MaxLineLength: t.maxLine,
	}
	return io.Connect(context.Background())
}

// Close stops and reaps the process; see process.Close.
func (t *stdioTransport) Close() error { return t.proc.Close() }

// headerTransport adds fixed headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) == 0 {
		return h.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// newHTTPTransport is the host's shared connection pool. It has no overall
// client timeout, which would cut long-lived SSE streams (NOTES.md); dial and
// header timeouts bound the parts that may hang.
func newHTTPTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 15 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
	}
}

// defaultDial spawns the process or prepares the HTTP transport of spec.
func (m *Manager) defaultDial(_ context.Context, server string, spec Spec) (mcp.Transport, error) {
	switch spec.Transport {
	case TransportStdio:
		proc, err := startProcess(server, spec, m.opts.StopGrace, m.log)
		if err != nil {
			return nil, err
		}
		return &stdioTransport{proc: proc, maxLine: spec.MaxFrameBytes}, nil
	case TransportSSE:
		return &mcp.SSEClientTransport{
			Endpoint:     spec.URL,
			HTTPClient:   m.httpClient(spec),
			MaxEventSize: spec.MaxFrameBytes,
		}, nil
	default:
		return &mcp.StreamableClientTransport{
			Endpoint:     spec.URL,
			HTTPClient:   m.httpClient(spec),
			MaxRetries:   1, // our backoff governs reconnection, not the SDK's
			MaxEventSize: spec.MaxFrameBytes,
		}, nil
	}
}

func (m *Manager) httpClient(spec Spec) *http.Client {
	return &http.Client{Transport: headerTransport{base: m.http, headers: spec.Headers}}
}

// discardLogger drops everything; the default when Options.Logger is nil.
var discardLogger = slog.New(slog.DiscardHandler)
