package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/gateway/console"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// switchDialer connects an in-process demo server until it is broken:
// then it ends the sessions it made and refuses to connect, until it is
// mended.
type switchDialer struct {
	srv *mcp.Server

	mu sync.Mutex
	// mu guards the following.
	fail     error
	sessions []*mcp.ServerSession
}

func (d *switchDialer) Dial(ctx context.Context) (mcp.Transport, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail != nil {
		return nil, d.fail
	}
	client, server := mcp.NewInMemoryTransports()
	ss, err := d.srv.Connect(ctx, server, nil)
	if err != nil {
		return nil, err
	}
	d.sessions = append(d.sessions, ss)
	return client, nil
}

// breakWith makes the server fail with err from now on, ending its
// sessions.
func (d *switchDialer) breakWith(err error) {
	d.mu.Lock()
	d.fail = err
	ss := d.sessions
	d.sessions = nil
	d.mu.Unlock()
	for _, s := range ss {
		_ = s.Close()
	}
}

func (d *switchDialer) mend() {
	d.mu.Lock()
	d.fail = nil
	d.mu.Unlock()
}

// fixture is a manager with one in-process demo server, "demo", whose
// retries wait retryAfter, and its console served on loopback.
type fixture struct {
	m    *manager.Manager
	dial *switchDialer
	c    *console.Console
	url  string // of the console's server, without /ui
}

const retryAfter = 40 * time.Second

func newFixture(t *testing.T, token string, secrets map[string]string) *fixture {
	t.Helper()
	return newFixtureWith(t, console.Options{Token: token}, secrets)
}

// newFixtureWith is newFixture with the console's options (its backend
// and clients are the fixture's).
func newFixtureWith(t *testing.T, opts console.Options, secrets map[string]string) *fixture {
	t.Helper()
	f := &fixture{m: manager.New(manager.Options{}), dial: &switchDialer{srv: demo.NewServer()}}
	require.NoError(t, f.m.Add("demo", manager.Spec{Transport: manager.TransportInProcess, Dial: f.dial, Secrets: secrets,
		Backoff: manager.Backoff{Initial: retryAfter, Max: retryAfter, Jitter: manager.NoJitter}}))
	opts.Backend = f.m
	opts.Clients = func() []console.Client {
		return []console.Client{{ID: "abc123", Name: "claude-code", Version: "2.1", Transport: "http", Endpoint: "/mcp",
			Toolset: "dev", Mode: "search", InFlight: 2, Since: time.Now()}}
	}
	f.c = console.New(opts)
	srv := httptest.NewServer(f.c)
	f.url = srv.URL
	t.Cleanup(func() {
		f.c.Close()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, f.m.Close(ctx))
	})
	f.waitState(t, "demo", manager.StateConnected)
	return f
}

func (f *fixture) waitState(t *testing.T, name string, want manager.State) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := f.m.Wait(ctx, name, want)
	require.NoError(t, err)
}

// browser is an HTTP client that keeps cookies and does not follow
// redirects, as a test reads them.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

var errBoom = errors.New("boom")
