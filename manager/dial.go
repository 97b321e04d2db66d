package manager

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/endpoint"
	"github.com/mcpvisor/mcpvisor/internal/proc"
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
		})
		if err != nil {
			return nil, err
		}
		return proc.NewTransport(p), nil
	case TransportSSE:
		client, url := m.httpClient(ctx, spec)
		return &mcp.SSEClientTransport{
			Endpoint:     url,
			HTTPClient:   client,
			MaxEventSize: spec.MaxFrameBytes,
		}, nil
	default:
		client, url := m.httpClient(ctx, spec)
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
// connect timeouts for their response headers.
func (m *Manager) httpClient(life context.Context, spec Spec) (*http.Client, string) {
	return endpoint.NewClient(life, m.http, endpoint.Config{
		URL:           spec.URL,
		Headers:       spec.Headers,
		HeaderTimeout: max(spec.Timeouts.Request, spec.Timeouts.Connect),
	})
}
