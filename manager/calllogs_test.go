package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// serveChatty is the test binary as a stdio server whose tool logs a
// debug message and three at info (and reports three steps of progress
// when asked to) and returns at once, over t: on protocol 2025-11-25 a
// server logs at the level its client set, on 2026-07-28 at the level
// each request names.
func serveChatty(t mcp.Transport) error {
	return chattyServer().Run(context.Background(), t)
}

// chattyServer is the server serveChatty serves.
func chattyServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "chatty", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "chatty", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "debug", Data: "details"}) // below the default
			for i, msg := range []string{"starting", "working", "finishing"} {
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: msg})
				if token := req.Params.GetProgressToken(); token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: 3})
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	return s
}

// oldProtocol is a server transport that serves protocol versions up to
// 2025-11-25.
type oldProtocol struct{ mcp.Transport }

func (oldProtocol) SupportsProtocolVersion(v string) bool { return v <= "2025-11-25" }

// chattyManager is a manager with the chatty server connected, and a
// context that bounds the test.
func chattyManager(t *testing.T) (*manager.Manager, context.Context) {
	t.Helper()
	return chattyOn(t, manager.ProtocolAuto)
}

// chattyOn is chattyManager with the server spoken to on protocol (the
// server speaks both generations).
func chattyOn(t *testing.T, protocol manager.Protocol) (*manager.Manager, context.Context) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	m := newManager(t, manager.Options{})
	mode := "chatty"
	if protocol == manager.Protocol20260728 {
		mode = "chatty-new"
	}
	require.NoError(t, m.Add("chatty", manager.Spec{Transport: manager.TransportStdio, Command: []string{self},
		Env: map[string]string{allocServerEnv: mode}, Protocol: protocol}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	_, err = m.Wait(ctx, "chatty", manager.StateConnected)
	require.NoError(t, err)
	return m, ctx
}

// chattyHTTP is chattyManager with the chatty server served over
// streamable HTTP on loopback by the go-sdk, spoken to on protocol: on
// 2026-07-28 a stateless server, which answers each request on a stream
// of its own.
func chattyHTTP(t *testing.T, protocol manager.Protocol) (*manager.Manager, context.Context) {
	t.Helper()
	srv := chattyServer()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: protocol == manager.Protocol20260728}))
	t.Cleanup(hs.Close) // after the manager's, which ends its streams
	m := newManager(t, manager.Options{})
	require.NoError(t, m.Add("chatty", manager.Spec{Transport: manager.TransportHTTP, URL: hs.URL, Protocol: protocol}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	st, err := m.Wait(ctx, "chatty", manager.StateConnected)
	require.NoError(t, err)
	require.Equal(t, string(protocol), st.Protocol)
	return m, ctx
}

// chattyServers are the chatty server over each transport whose
// notifications a call waits for.
var chattyServers = map[string]func(t *testing.T) (*manager.Manager, context.Context){
	"stdio":                 chattyManager,
	"streamable 2025-11-25": func(t *testing.T) (*manager.Manager, context.Context) { return chattyHTTP(t, manager.Protocol20251125) },
	"stateless 2026-07-28":  func(t *testing.T) (*manager.Manager, context.Context) { return chattyHTTP(t, manager.Protocol20260728) },
}

// A call returns once the log messages the server sent before its result
// have been published: a listener that takes what it holds as the call
// returns has all of them, from a stdio server or on the call's response
// stream over HTTP.
func TestCallReturnsAfterItsServersLogs(t *testing.T) {
	for name, connect := range chattyServers {
		t.Run(name, func(t *testing.T) {
			m, ctx := connect(t)
			l := m.Notices().Listen(notify.ListenOptions{})
			defer l.Close()
			for i := range 20 {
				res, err := m.Call(ctx, "chatty.chatty", nil, manager.CallOptions{})
				require.NoError(t, err)
				require.False(t, res.IsError)
				require.Equal(t, []string{"starting", "working", "finishing"}, logsOf(t, l), "call %d", i)
			}
		})
	}
}

// A call returns once the progress the server reported before its result
// has been handed to the caller: a caller that sends its result on at
// once never lets it overtake the last progress.
func TestCallReturnsAfterItsServersProgress(t *testing.T) {
	for name, connect := range chattyServers {
		t.Run(name, func(t *testing.T) { callProgressFirst(t, connect) })
	}
}

// callProgressFirst is TestCallReturnsAfterItsServersProgress on the
// server connect connects.
func callProgressFirst(t *testing.T, connect func(t *testing.T) (*manager.Manager, context.Context)) {
	m, ctx := connect(t)
	for i := range 20 {
		var mu sync.Mutex
		var got []float64
		res, err := m.Call(ctx, "chatty.chatty", nil, manager.CallOptions{Progress: func(p manager.Progress) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p.Progress)
		}})
		require.NoError(t, err)
		require.False(t, res.IsError)
		mu.Lock()
		progress := slices.Clone(got)
		mu.Unlock()
		require.Equal(t, []float64{1, 2, 3}, progress, "call %d", i)
	}
}

// A raw call that wants progress gets the server's, every report of it
// by the time it returns: the client's own token is replaced with one of
// the manager's on the way, so two calls under the same client token
// (two clients chose it) each get only their own three reports, and a
// client token shaped like the manager's steals nothing.
func TestCallRawRelaysItsOwnProgress(t *testing.T) {
	m, ctx := chattyManager(t)
	for round := range 10 {
		var wg sync.WaitGroup
		got := make([][]float64, 2)
		for i, token := range []string{`"same"`, `"same"`} {
			if round%2 == 1 {
				token = `"mcpvisor-` + fmt.Sprint(i+1) + `"`
			}
			wg.Go(func() {
				var mu sync.Mutex
				var mine []float64
				res, err := m.CallRaw(ctx, "chatty", "chatty", nil, json.RawMessage(`{"progressToken":`+token+`,"k":"v"}`), manager.CallOptions{
					Progress: func(p manager.Progress) {
						mu.Lock()
						defer mu.Unlock()
						mine = append(mine, p.Progress)
					}})
				if !assert.NoError(t, err) {
					return
				}
				assert.Contains(t, string(res), `"text":"done"`)
				mu.Lock()
				got[i] = mine
				mu.Unlock()
			})
		}
		wg.Wait()
		require.Equal(t, [][]float64{{1, 2, 3}, {1, 2, 3}}, got, "round %d", round)
	}
}

// A server is asked for the most verbose log level anyone holds, and
// again for the default (info) once nobody holds a more verbose one.
func TestHeldLogLevelIsAskedOfServers(t *testing.T) {
	m, ctx := chattyManager(t)
	l := m.Notices().Listen(notify.ListenOptions{})
	defer l.Close()
	heard := func() []string {
		_, err := m.Call(ctx, "chatty.chatty", nil, manager.CallOptions{})
		require.NoError(t, err)
		return logsOf(t, l)
	}
	quiet := []string{"starting", "working", "finishing"}
	require.Equal(t, quiet, heard(), "the default level")

	release := m.HoldLogLevel("debug")
	other := m.HoldLogLevel("error") // less verbose: changes nothing
	require.Eventually(t, func() bool { return slices.Equal(heard(), append([]string{"details"}, quiet...)) },
		10*time.Second, 10*time.Millisecond, "debug asked for")
	release()
	release() // once only
	require.Eventually(t, func() bool { return slices.Equal(heard(), quiet) },
		10*time.Second, 10*time.Millisecond, "back to the default")
	other()
}

// However quickly the level wanted changes, the server is left at the one
// last wanted: the requests go out one at a time, in order, even when the
// server is slow to take one.
func TestLogLevelChangesReachTheServerInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("a")
		var mu sync.Mutex
		var applied []mcp.LoggingLevel
		slow := make(chan struct{})
		f.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if p, ok := req.GetParams().(*mcp.SetLoggingLevelParams); ok && method == "logging/setLevel" {
					if p.Level == "debug" {
						<-slow
					}
					mu.Lock()
					applied = append(applied, p.Level)
					mu.Unlock()
				}
				return next(ctx, method, req)
			}
		})
		m := newManager(t, manager.Options{Dial: fleet{"x": f.serve()}.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)

		release := m.HoldLogLevel("debug")
		synctest.Wait() // the server is slow to take debug
		release()
		synctest.Wait()
		close(slow)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []mcp.LoggingLevel{"info", "debug", "info"}, applied)
	})
}

// logsOf is the data of the log messages l holds now, in order.
func logsOf(t *testing.T, l *notify.Listener) []string {
	t.Helper()
	var got []string
	for {
		n, ok, err := l.TryNext()
		require.NoError(t, err)
		if !ok {
			return got
		}
		if lm, ok := n.(notify.LogMessage); ok {
			got = append(got, fmt.Sprint(lm.Data))
		}
	}
}

// A call whose caller wants the server's log messages at a level more
// verbose than servers are asked for (debug) gets them from the first
// call on, on either protocol generation: on 2025-11-25 the server is
// asked for the level, and has answered, before the call is sent; on
// 2026-07-28, which has no level but the request's, the call's _meta
// names it. The call after it, wanting nothing, gets the default level
// (info), on 2026-07-28 too.
func TestCallLevelIsAskedBeforeTheCall(t *testing.T) {
	for name, protocol := range map[string]manager.Protocol{"2025-11-25": manager.ProtocolAuto, "2026-07-28": manager.Protocol20260728} {
		t.Run(name, func(t *testing.T) {
			m, ctx := chattyOn(t, protocol)
			l := m.Notices().Listen(notify.ListenOptions{})
			defer l.Close()
			quiet := []string{"starting", "working", "finishing"}
			for i := range 3 {
				res, err := m.Call(ctx, "chatty.chatty", nil, manager.CallOptions{LogLevel: "debug"})
				require.NoError(t, err)
				require.False(t, res.IsError)
				require.Equal(t, append([]string{"details"}, quiet...), logsOf(t, l), "call %d at debug", i)
				res, err = m.Call(ctx, "chatty.chatty", nil, manager.CallOptions{})
				require.NoError(t, err)
				require.False(t, res.IsError)
				// On 2025-11-25 the server may still be at debug a moment.
				if got := logsOf(t, l); protocol == manager.Protocol20260728 {
					// The level is the request's own: nothing lingers.
					require.Equal(t, quiet, got, "call %d at the default", i)
				}
			}
		})
	}
}

// A server that never answers logging/setLevel delays a call that wants
// more verbose logs by five seconds, not the call's whole timeout: the
// call is then sent, answered, and the calls after it do not wait again.
func TestCallDoesNotWaitLongForALevelTheServerNeverTakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeServer(nil)
		f.addEcho("a")
		m := newManager(t, manager.Options{Dial: fleet{"x": f.serve()}.dial})
		tl := watch(t, m)
		require.NoError(t, m.Add("x", fakeSpec(t, nil)))
		tl.until("x", events.KindConnected, time.Second)
		f.setHang("logging/setLevel", true)

		ctx := context.Background()
		start := time.Now()
		res, err := m.Call(ctx, "x.a", map[string]any{"text": "hi"}, manager.CallOptions{LogLevel: "debug"})
		require.NoError(t, err)
		require.False(t, res.IsError)
		require.Equal(t, 5*time.Second, time.Since(start), "waited for the level this long")

		start = time.Now()
		_, err = m.Call(ctx, "x.a", map[string]any{"text": "again"}, manager.CallOptions{LogLevel: "debug"})
		require.NoError(t, err)
		require.Zero(t, time.Since(start), "the next call does not wait for the same request again")
	})
}
