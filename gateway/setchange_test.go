package gateway_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// dialer is an in-process demo server that a test slows down, breaks and
// disconnects.
type dialer struct {
	srv *mcp.Server

	mu sync.Mutex
	// mu guards the following.
	delay    time.Duration // before each connection
	fail     error         // if set, connections fail
	sessions []*mcp.ServerSession
}

func newDialer() *dialer { return &dialer{srv: demo.NewServer()} }

func (d *dialer) Dial(ctx context.Context) (mcp.Transport, error) {
	d.mu.Lock()
	delay, fail := d.delay, d.fail
	d.mu.Unlock()
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if fail != nil {
		return nil, fail
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := d.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.sessions = append(d.sessions, ss)
	d.mu.Unlock()
	return ct, nil
}

func (d *dialer) set(delay time.Duration, fail error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.delay, d.fail = delay, fail
}

// drop ends the server's sessions, as a crash would.
func (d *dialer) drop() {
	d.mu.Lock()
	sessions := d.sessions
	d.sessions = nil
	d.mu.Unlock()
	for _, ss := range sessions {
		_ = ss.Close()
	}
}

func (d *dialer) spec(retries *int) manager.Spec {
	return manager.Spec{Transport: manager.TransportInProcess, Dial: d, MaxRetries: retries,
		Timeouts: manager.Timeouts{Idle: manager.Never}}
}

// bubble is a manager and a gateway in a synctest bubble, closed at the
// end of it.
type bubble struct {
	t  *testing.T
	m  *manager.Manager
	gw *gateway.Gateway
}

func newBubble(t *testing.T, opts gateway.Options) *bubble {
	m := manager.New(manager.Options{})
	opts.Source = m
	b := &bubble{t: t, m: m, gw: gateway.New(opts)}
	t.Cleanup(func() {
		b.gw.Close()
		require.NoError(t, m.Close(context.Background()))
	})
	return b
}

// stdioClient is a go-sdk client of the gateway's stdio serving, through
// pipes, counting the tools/list_changed it is sent.
type stdioClient struct {
	*mcp.ClientSession
	changed chan struct{}
}

func (b *bubble) connect(name string) *stdioClient { return b.connectTo(name, "") }

// connectTo connects to a server's own endpoint ("" for /mcp).
func (b *bubble) connectTo(name, server string) *stdioClient {
	t := b.t
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.gw.ServeStdio(ctx, inR, outW, server, "") }()
	c := &stdioClient{changed: make(chan struct{}, 100)}
	cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changed <- struct{}{} },
	})
	var err error
	c.ClientSession, err = cl.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		_ = inW.Close()
		_ = outR.Close()
		if err := <-served; err != nil && !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return c
}

func (c *stdioClient) tools(t *testing.T) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// told drains the list_changed notifications received so far and
// reports whether there was one.
func (c *stdioClient) told() bool {
	got := false
	for {
		select {
		case <-c.changed:
			got = true
		default:
			return got
		}
	}
}

func hasServer(names []string, server string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, server+"__") })
}

// aSecond lets a second pass in the bubble, and what it set going finish.
func aSecond() {
	time.Sleep(time.Second)
	synctest.Wait()
}

// Disabling, enabling, a server failing for good and its recovery each
// change what clients are offered within a second, and each is announced
// with tools/list_changed.
func TestSetChangesReachClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{})
		a, fragile := newDialer(), newDialer()
		require.NoError(t, b.m.Add("a", a.spec(nil)))
		require.NoError(t, b.m.Add("fragile", fragile.spec(new(int))))
		synctest.Wait()
		c := b.connect("set-changes")
		synctest.Wait()
		names := c.tools(t)
		require.True(t, hasServer(names, "a") && hasServer(names, "fragile"), "%v", names)
		c.told()

		require.NoError(t, b.m.Disable("a"))
		aSecond()
		require.True(t, c.told(), "no tools/list_changed after a server was disabled")
		require.False(t, hasServer(c.tools(t), "a"), "a disabled server's tools are still offered")
		prompts, err := c.ListPrompts(context.Background(), nil)
		require.NoError(t, err)
		require.False(t, slices.ContainsFunc(prompts.Prompts, func(p *mcp.Prompt) bool { return p.Name == "a__greet" }),
			"a disabled server's prompts are still offered")

		require.NoError(t, b.m.Enable("a"))
		aSecond()
		require.True(t, c.told(), "no tools/list_changed after a server was enabled")
		require.True(t, hasServer(c.tools(t), "a"), "an enabled server's tools are not offered")

		// fragile may not retry: once its session is lost and the one
		// attempt fails, it has failed for good.
		fragile.set(0, errors.New("it is gone"))
		fragile.drop()
		aSecond()
		st, err := b.m.Status("fragile")
		require.NoError(t, err)
		require.Equal(t, manager.StateFailed, st.State)
		require.True(t, c.told(), "no tools/list_changed after a server failed for good")
		require.False(t, hasServer(c.tools(t), "fragile"), "a failed server's tools are still offered")

		fragile.set(0, nil)
		require.NoError(t, b.m.Reconnect("fragile"))
		aSecond()
		require.True(t, c.told(), "no tools/list_changed after a server recovered")
		require.True(t, hasServer(c.tools(t), "fragile"), "a recovered server's tools are not offered")
	})
}

// A server that leaves and is back before its tools are taken off the
// lists (disabled and enabled again, as a restart does) changes no
// client's lists: the clients are told nothing. One that stays away
// leaves them after a short grace, with one list_changed.
func TestBriefAbsenceChangesNoList(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBubble(t, gateway.Options{})
		a := newDialer()
		require.NoError(t, b.m.Add("a", a.spec(nil)))
		synctest.Wait()
		c := b.connect("brief-absence")
		synctest.Wait()
		require.True(t, hasServer(c.tools(t), "a"))
		c.told()

		require.NoError(t, b.m.Disable("a"))
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		require.NoError(t, b.m.Enable("a"))
		aSecond()
		require.False(t, c.told(), "a server away for 100 ms made its clients relist")
		require.True(t, hasServer(c.tools(t), "a"))

		require.NoError(t, b.m.Disable("a"))
		aSecond()
		require.True(t, c.told(), "no tools/list_changed after a server stayed disabled")
		require.False(t, hasServer(c.tools(t), "a"))
	})
}
