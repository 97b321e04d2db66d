package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/peer"
	"github.com/mcpvisor/mcpvisor/manager"
)

// httpClient drives g's HTTP handler in process, as a streamable HTTP
// client would (in a bubble, where real sockets cannot be).
type httpClient struct {
	t       *testing.T
	h       http.Handler
	session string
	remote  string // the client's address
}

// send posts body (or, for DELETE, nothing) and returns the answer.
func (c *httpClient) send(method, body string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "http://127.0.0.1/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
	}
	if c.remote != "" {
		req.RemoteAddr = c.remote
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	return rec
}

// open initializes a session on protocol 2025-03-26 (which allows JSON-RPC
// batches).
func (c *httpClient) open() {
	c.t.Helper()
	rec := c.send(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"inproc","version":"1"}}}`, nil)
	require.Equal(c.t, http.StatusOK, rec.Code, rec.Body.String())
	c.session = rec.Header().Get("Mcp-Session-Id")
	require.NotEmpty(c.t, c.session)
	rec = c.send(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	require.Less(c.t, rec.Code, 300, rec.Body.String())
}

// callBody is a tools/call request of tool with id.
func callBody(id int, tool string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool)
}

// A session that sends nothing for 10 minutes (the default) is closed;
// one with a call in flight is never idle, however long the call takes.
func TestIdleSessionExpires(t *testing.T) {
	const idle = 10 * time.Minute
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(t)
		src.set("op", stdio, "run", "wait")
		release := make(chan struct{})
		src.answerWith(func(ctx context.Context, name string, _ manager.CallOptions) (*mcp.CallToolResult, error) {
			if name == "op.wait" {
				<-release
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
		g := newGateway(t, src)
		c := &httpClient{t: t, h: g.Handler(HTTPOptions{})}
		c.open()
		synctest.Wait()
		require.Len(t, g.Clients(), 1)

		time.Sleep(idle - time.Second)
		rec := c.send(http.MethodPost, callBody(2, "op__run"), nil)
		require.Contains(t, rec.Body.String(), `"text":"op.run"`, "the session expired early")

		answered := make(chan string, 1)
		go func() { answered <- c.send(http.MethodPost, callBody(3, "op__wait"), nil).Body.String() }()
		time.Sleep(3 * idle)
		synctest.Wait()
		require.Len(t, g.Clients(), 1, "a session with a call in flight was closed as idle")
		close(release)
		require.Contains(t, <-answered, `"text":"op.wait"`)

		time.Sleep(idle - time.Second)
		synctest.Wait()
		require.Len(t, g.Clients(), 1, "closed before it was idle for the timeout")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		require.Empty(t, g.Clients(), "a session idle for the timeout is still open")
		rec = c.send(http.MethodPost, callBody(4, "op__run"), nil)
		require.Equal(t, http.StatusNotFound, rec.Code, "the expired session still answers: %s", rec.Body.String())
	})
}

// One client cannot have more requests in flight upstream than its limit,
// however it sends them: a JSON-RPC batch of 20 calls runs 4 and refuses
// the rest with an error that says why.
func TestClientCallLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(t)
		src.set("op", stdio, "wait")
		release := make(chan struct{})
		var mu sync.Mutex
		inFlight, most := 0, 0
		src.answerWith(func(ctx context.Context, name string, _ manager.CallOptions) (*mcp.CallToolResult, error) {
			mu.Lock()
			inFlight++
			most = max(most, inFlight)
			mu.Unlock()
			<-release
			mu.Lock()
			inFlight--
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
		g := New(Options{Source: src, MaxClientCalls: 4})
		t.Cleanup(g.Close)
		c := &httpClient{t: t, h: g.Handler(HTTPOptions{})}
		c.open()

		var batch []string
		for i := range 20 {
			batch = append(batch, callBody(10+i, "op__wait"))
		}
		answered := make(chan string, 1)
		go func() { answered <- c.send(http.MethodPost, "["+strings.Join(batch, ",")+"]", nil).Body.String() }()
		synctest.Wait() // every request of the batch handled: run, or refused
		mu.Lock()
		require.Equal(t, 4, inFlight, "calls upstream at once from one client")
		mu.Unlock()
		close(release)

		type answer struct {
			Result mcp.CallToolResult `json:"result"`
		}
		var answers []answer
		for line := range strings.Lines(<-answered) {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				var a answer
				require.NoError(t, json.Unmarshal([]byte(data), &a), data)
				answers = append(answers, a)
			}
		}
		require.Len(t, answers, 20)
		done, refused := 0, 0
		for _, a := range answers {
			switch {
			case !a.Result.IsError:
				done++
			case strings.Contains(a.Result.Content[0].(*mcp.TextContent).Text, "--max-client-calls"):
				refused++
			}
		}
		assert.Equal(t, 4, done)
		assert.Equal(t, 16, refused)
		assert.Equal(t, 4, most)
	})
}

// Shutdown lets a call in flight finish within the grace, answers one
// still running when the grace is over with an error (and cancels it
// upstream), refuses new calls meanwhile, and returns at the grace's end.
func TestShutdownGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(t)
		src.set("op", stdio, "quick", "stuck")
		cancelled := make(chan error, 1)
		src.answerWith(func(ctx context.Context, name string, _ manager.CallOptions) (*mcp.CallToolResult, error) {
			if name == "op.stuck" {
				<-ctx.Done()
				cancelled <- context.Cause(ctx)
				return nil, ctx.Err()
			}
			time.Sleep(5 * time.Second)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "quick done"}}}, nil
		})
		g := newGateway(t, src)
		c := connect(t, g, everything, "")
		c.eventually(t, "op__quick", "op__stuck")
		type answer struct {
			res *mcp.CallToolResult
			at  time.Duration
		}
		start := time.Now()
		calls := map[string]chan answer{"op__quick": make(chan answer, 1), "op__stuck": make(chan answer, 1)}
		for name, ch := range calls {
			go func() {
				res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: name})
				require.NoError(t, err, name)
				ch <- answer{res, time.Since(start)}
			}()
		}
		synctest.Wait()

		shut := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			shut <- g.Shutdown(ctx)
		}()
		synctest.Wait()
		res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "op__quick"})
		require.NoError(t, err)
		require.True(t, res.IsError, "a call made during the shutdown was run")
		assert.Contains(t, resultText(res), ErrShuttingDown.Error())

		quick := <-calls["op__quick"]
		assert.False(t, quick.res.IsError, resultText(quick.res))
		assert.Equal(t, 5*time.Second, quick.at, "the call in flight finished in its own time")
		stuck := <-calls["op__stuck"]
		assert.True(t, stuck.res.IsError)
		assert.Contains(t, resultText(stuck.res), "shutdown grace")
		assert.Equal(t, 10*time.Second, stuck.at, "answered when the grace ran out")
		assert.ErrorIs(t, <-cancelled, ErrShuttingDown, "cancelled upstream")
		require.ErrorIs(t, <-shut, context.DeadlineExceeded)
		assert.Equal(t, 10*time.Second, time.Since(start))
	})
}

// A peer that keeps sending wrong tokens is shut out for longer and longer
// (the right token too, while it is), and logged; a 401 carries a Bearer
// challenge; other peers are not affected.
func TestWrongTokensSlowDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		src := newFakeSource(t)
		g := New(Options{Source: src, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		t.Cleanup(g.Close)
		tok := strings.Repeat("ef", 32)
		h := g.Handler(HTTPOptions{Token: tok})
		guesser := &httpClient{t: t, h: h, remote: "192.0.2.7:4321"}
		other := &httpClient{t: t, h: h, remote: "192.0.2.8:4321"}
		get := func(c *httpClient, token string) *httptest.ResponseRecorder {
			header := map[string]string{}
			if token != "" {
				header["Authorization"] = "Bearer " + token
			}
			return c.send(http.MethodDelete, "", header) // no session: 400 once through
		}

		rec := get(guesser, "")
		require.Equal(t, http.StatusUnauthorized, rec.Code)
		assert.Equal(t, `Bearer realm="mcpvisor"`, rec.Header().Get("WWW-Authenticate"))
		for i := range peer.FreeGuesses {
			rec = get(guesser, fmt.Sprintf("guess-%d", i))
			require.Equal(t, http.StatusUnauthorized, rec.Code)
			assert.Equal(t, `Bearer realm="mcpvisor", error="invalid_token"`, rec.Header().Get("WWW-Authenticate"))
		}
		require.NotContains(t, logs.String(), "level=WARN", "a few wrong tokens are not yet worth a warning")
		require.NotEqual(t, http.StatusUnauthorized, get(guesser, tok).Code, "the right token after a few wrong ones")

		for i, shutOut := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
			require.Equal(t, http.StatusUnauthorized, get(guesser, "again").Code)
			rec = get(guesser, tok)
			require.Equal(t, http.StatusTooManyRequests, rec.Code, "wrong token %d over the free ones", i+1)
			assert.Equal(t, fmt.Sprint(int(shutOut.Seconds())), rec.Header().Get("Retry-After"))
			assert.NotEqual(t, http.StatusTooManyRequests, get(other, tok).Code, "another peer is shut out too")
			time.Sleep(shutOut - time.Millisecond)
			require.Equal(t, http.StatusTooManyRequests, get(guesser, tok).Code)
			time.Sleep(time.Millisecond)
		}
		assert.Equal(t, 3, strings.Count(logs.String(), "level=WARN"), logs.String())
		assert.Contains(t, logs.String(), "peer=192.0.2.7")
		assert.NotEqual(t, http.StatusTooManyRequests, get(guesser, tok).Code)
	})
}

// syncBuffer is a bytes.Buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	// mu guards b.
	b bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
