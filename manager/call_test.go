package manager_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// otherServer offers echo (like the demo server) and reverse (unlike it).
func otherServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "other", Version: "1.0.0"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echo"},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "other:" + a.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "reverse", Description: "reverse"},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
			r := []rune(a.Text)
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(r)}}}, nil, nil
		})
	return s
}

// twoServers runs "demo" (the demo server) and "other" (otherServer), both
// connected, in the current bubble.
func twoServers(t *testing.T) (*manager.Manager, map[string]*peers) {
	t.Helper()
	ps := map[string]*peers{"demo": {newServer: demo.NewServer}, "other": {newServer: otherServer}}
	dial := func(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
		return ps[name].dial(ctx, name, spec)
	}
	m := newManager(t, manager.Options{Dial: dial, Rand: constRand(0)})
	for name := range ps {
		require.NoError(t, m.Add(name, fakeSpec(t, nil)))
	}
	for name := range ps {
		_, err := m.Wait(context.Background(), name, manager.StateConnected)
		require.NoError(t, err)
	}
	return m, ps
}

func text(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	require.NotNil(t, res)
	require.Len(t, res.Content, 1)
	tc, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "content is %T", res.Content[0])
	return tc.Text
}

// How a tool name finds its server.
func TestCallResolvesNames(t *testing.T) {
	tests := []struct {
		name     string
		tool     string
		want     string // result text, if the call succeeds
		wantErr  error
		wantSrv  string
		wantOp   string
		wantText string // the error's message
	}{
		{name: "full name", tool: "demo.echo", want: "hi"},
		{name: "full name, other server", tool: "other.echo", want: "other:hi"},
		{name: "server part is case-insensitive", tool: "OTHER.reverse", want: "ih"},
		{name: "bare name offered by one server", tool: "reverse", want: "ih"},
		{name: "surrounding space", tool: "  demo.echo ", want: "hi"},
		{
			name: "bare name offered by two servers", tool: "echo",
			wantErr: manager.ErrAmbiguousTool, wantOp: "call",
			wantText: `call: tool "echo" is offered by 2 servers; call one of: demo.echo, other.echo`,
		},
		{
			name: "unknown bare name with close matches", tool: "ech",
			wantErr: manager.ErrToolNotFound, wantOp: "call",
			wantText: `call: no tool "ech"; did you mean "demo.echo" or "other.echo"?`,
		},
		{
			name: "unknown bare name, nothing close", tool: "zzzzzz",
			wantErr: manager.ErrToolNotFound, wantOp: "call",
			wantText: `call: no tool "zzzzzz"`,
		},
		{
			name: "unknown server in a full name", tool: "dmo.echo",
			wantErr: manager.ErrToolNotFound, wantOp: "call",
			wantText: `call: no server "dmo" and no tool "dmo.echo"; did you mean "demo.echo"?`,
		},
		{
			name: "known server, unknown tool", tool: "demo.zap",
			wantErr: manager.ErrToolNotFound, wantSrv: "demo", wantOp: `tools/call "zap"`,
			wantText: `server "demo": tools/call "zap": server has no tool "zap"; its tools: add, echo, fail, sleep`,
		},
		{
			name: "known server, tool with a typo", tool: "demo.eco",
			wantErr: manager.ErrToolNotFound, wantSrv: "demo", wantOp: `tools/call "eco"`,
			wantText: `server "demo": tools/call "eco": server has no tool "eco"; did you mean "echo"?`,
		},
	}
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t)
		for _, tt := range tests {
			res, err := m.Call(context.Background(), tt.tool, map[string]any{"text": "hi"}, manager.CallOptions{})
			if tt.wantErr == nil {
				require.NoError(t, err, tt.name)
				require.Equal(t, tt.want, text(t, res), tt.name)
				continue
			}
			require.Nil(t, res, tt.name)
			requireCode(t, err, tt.wantErr, tt.wantSrv, tt.wantOp)
			require.Equal(t, tt.wantText, err.Error(), tt.name)
		}
	})
}

// A tool error is a result the caller can read, not an error.
func TestCallToolErrorIsAResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t)
		res, err := m.Call(context.Background(), "demo.fail", map[string]any{"message": "disk full"}, manager.CallOptions{})
		require.NoError(t, err)
		require.True(t, res.IsError)
		require.Equal(t, "disk full", text(t, res), "the content of a failed tool is kept")

		res, err = m.Call(context.Background(), "demo.add", map[string]any{"a": 2, "b": 40}, manager.CallOptions{})
		require.NoError(t, err)
		require.False(t, res.IsError)
		require.Equal(t, map[string]any{"sum": float64(42)}, res.StructuredContent)
	})
}

// A call that outlives its timeout fails at exactly that timeout with
// INVOCATION_FAILED naming server, operation and limit; the session stays
// usable. Without a per-call timeout the server's request timeout applies.
func TestCallTimeout(t *testing.T) {
	tests := []struct {
		name    string
		extra   map[string]any
		opts    manager.CallOptions
		want    time.Duration
		wantMsg string
	}{
		{
			name: "per call", opts: manager.CallOptions{Timeout: time.Second}, want: time.Second,
			wantMsg: `server "demo": tools/call "sleep": timeout after 1s`,
		},
		{
			name: "timeouts.request", extra: map[string]any{"timeouts": map[string]any{"request": "2500ms"}},
			want: 2500 * ms, wantMsg: `server "demo": tools/call "sleep": timeout after 2.5s`,
		},
		{
			name: "default request timeout", want: 30 * time.Second,
			wantMsg: `server "demo": tools/call "sleep": timeout after 30s`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &peers{}
				m := newManager(t, manager.Options{Dial: p.dial})
				require.NoError(t, m.Add("demo", fakeSpec(t, tt.extra)))
				_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
				require.NoError(t, err)

				start := time.Now()
				res, err := m.Call(context.Background(), "demo.sleep", map[string]any{"ms": 600_000}, tt.opts)
				require.Equal(t, tt.want, time.Since(start))
				require.Nil(t, res)
				requireCode(t, err, manager.ErrInvocationFailed, "demo", `tools/call "sleep"`)
				require.ErrorIs(t, err, manager.ErrTimeout)
				require.EqualError(t, err, tt.wantMsg)

				res, err = m.Call(context.Background(), "demo.echo", map[string]any{"text": "still here"}, manager.CallOptions{})
				require.NoError(t, err, "the session survives a timed-out call")
				require.Equal(t, "still here", text(t, res))
				require.Equal(t, manager.StateConnected, mustStatus(t, m, "demo").State)
				require.Equal(t, 1, p.dialCount(), "a timeout is no reason to reconnect")
			})
		})
	}
}

// A call in flight when the session is lost fails at once instead of
// waiting out its timeout, and it is not retried.
func TestCallFailsWhenSessionIsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		require.NoError(t, m.Add("demo", fakeSpec(t, nil)))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)

		start := time.Now()
		errc := make(chan error, 1)
		go func() {
			_, err := m.Call(context.Background(), "demo.sleep", map[string]any{"ms": 60_000}, manager.CallOptions{Timeout: time.Minute})
			errc <- err
		}()
		time.Sleep(time.Second)
		p.drop(t)
		err = <-errc
		require.Equal(t, time.Second, time.Since(start), "fails when the session ends, not at its timeout")
		requireCode(t, err, manager.ErrInvocationFailed, "demo", `tools/call "sleep"`)
		require.NotErrorIs(t, err, manager.ErrTimeout)
		require.Contains(t, err.Error(), "it may or may not have run")
	})
}

// A caller's own cancellation is reported as such, not as a timeout.
func TestCallCancelledByCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		_, err := m.Call(ctx, "demo.sleep", map[string]any{"ms": 60_000}, manager.CallOptions{})
		requireCode(t, err, manager.ErrInvocationFailed, "demo", `tools/call "sleep"`)
		require.NotErrorIs(t, err, manager.ErrTimeout)
		require.ErrorIs(t, err, context.Canceled)
	})
}
