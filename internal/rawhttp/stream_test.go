package rawhttp

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// roundTrip serves a Session's requests from memory, so that a test runs
// in a synctest bubble (fake time) without sockets.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// eventStream is a 200 response whose body is the event stream s.
func eventStream(s string) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(strings.NewReader(s))}
}

// cutServer answers a call's POST with stream (cut before the answer)
// and each GET with what get returns for the attempt (from 1); it records
// the GETs.
type cutServer struct {
	stream string
	get    func(attempt int, id string) (*http.Response, error)

	mu sync.Mutex
	// mu guards the following.
	gets []resumeGet
	id   string // the call's request id
}

// resumeGet is a GET the server saw: when, and its headers.
type resumeGet struct {
	at                     time.Time
	lastEventID, sessionID string
	accept                 string
}

func (c *cutServer) session(maxRetries int) Session {
	return Session{URL: "http://mcp.test/mcp", ID: "s-1", Protocol: "2025-11-25", MaxRetries: maxRetries,
		Client: &http.Client{Transport: roundTrip(c.serve)}}
}

func (c *cutServer) serve(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost {
		var m struct{ ID json.RawMessage }
		_ = json.NewDecoder(r.Body).Decode(&m)
		c.mu.Lock()
		c.id = string(m.ID)
		c.mu.Unlock()
		return eventStream(c.stream), nil
	}
	c.mu.Lock()
	c.gets = append(c.gets, resumeGet{time.Now(), r.Header.Get("Last-Event-ID"), r.Header.Get("Mcp-Session-Id"), r.Header.Get("Accept")})
	n, id := len(c.gets), c.id
	c.mu.Unlock()
	return c.get(n, id)
}

func (c *cutServer) seen() []resumeGet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]resumeGet(nil), c.gets...)
}

// notes records the notifications of a call.
type notes struct{ methods []string }

func (n *notes) Notify(method string, _ json.RawMessage) { n.methods = append(n.methods, method) }
func (n *notes) Ask(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, errors.New("no questions here")
}

const logEvent = `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\n\n"

// A call whose stream is cut after an event with an id is resumed with a
// GET carrying that Last-Event-ID and the session's headers, after the
// go-sdk's backoff (1–2s, then 1.5–3s after a GET that failed), and its
// answer comes on the resumed stream.
func TestCutStreamResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &cutServer{stream: "id: e1\n" + logEvent, get: func(attempt int, id string) (*http.Response, error) {
			if attempt == 1 {
				return nil, errors.New("connection refused")
			}
			return eventStream(`id: e2` + "\n" + `data: {"jsonrpc":"2.0","id":` + id + `,"result":{"ok":true}}` + "\n\n"), nil
		}}
		start := time.Now()
		var n notes
		res, err := c.session(2).Call(context.Background(), "tools/call", json.RawMessage(`{"name":"t"}`), "", &n)
		require.NoError(t, err)
		require.JSONEq(t, `{"ok":true}`, string(res))
		require.Equal(t, []string{"notifications/message"}, n.methods, "what came before the cut")
		gets := c.seen()
		require.Len(t, gets, 2)
		for _, g := range gets {
			require.Equal(t, "e1", g.lastEventID)
			require.Equal(t, "s-1", g.sessionID)
			require.Equal(t, "text/event-stream", g.accept)
		}
		first, second := gets[0].at.Sub(start), gets[1].at.Sub(gets[0].at)
		require.True(t, first >= time.Second && first < 2*time.Second, "first attempt after %s", first)
		require.True(t, second >= 1500*time.Millisecond && second < 3*time.Second, "second attempt after %s", second)
	})
}

// A stream's retry: field sets the wait before its resumption.
func TestCutStreamResumesAfterTheServersRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &cutServer{stream: "retry: 250\nid: e1\n\n" + logEvent, get: func(_ int, id string) (*http.Response, error) {
			return eventStream(`data: {"jsonrpc":"2.0","id":` + id + `,"result":{}}` + "\n\n"), nil
		}}
		start := time.Now()
		_, err := c.session(0).Call(context.Background(), "tools/call", nil, "", &notes{})
		require.NoError(t, err)
		gets := c.seen()
		require.Len(t, gets, 1)
		require.Equal(t, "e1", gets[0].lastEventID, "a priming event's id counts")
		require.Equal(t, 250*time.Millisecond, gets[0].at.Sub(start))
	})
}

// A resumption is given up, and with it the session (ErrBroken), as the
// go-sdk gives it up: after MaxRetries resumed streams that end without a
// new event id, when every GET fails, when the GET is refused, and at
// once when resumption is turned off. A stream that gives no event id at
// all is not resumed: the call fails alone (ErrNoAnswer).
func TestCutStreamGivenUp(t *testing.T) {
	noProgress := func(int, string) (*http.Response, error) { return eventStream("id: e1\n\n"), nil }
	refused := func(int, string) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusInternalServerError, Body: io.NopCloser(strings.NewReader("down"))}, nil
	}
	unreachable := func(int, string) (*http.Response, error) { return nil, errors.New("connection refused") }
	tests := []struct {
		name       string
		stream     string
		maxRetries int
		get        func(int, string) (*http.Response, error)
		gets       int
		want       error
	}{
		{"no progress", "id: e1\n" + logEvent, 1, noProgress, 2, ErrBroken},
		{"unreachable", "id: e1\n" + logEvent, 3, unreachable, 3, ErrBroken},
		{"refused", "id: e1\n" + logEvent, 1, refused, 1, ErrBroken},
		{"turned off", "id: e1\n" + logEvent, -1, noProgress, 0, ErrBroken},
		{"no event id", logEvent, 1, noProgress, 0, ErrNoAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &cutServer{stream: tt.stream, get: tt.get}
				_, err := c.session(tt.maxRetries).Call(context.Background(), "tools/call", nil, "", &notes{})
				require.ErrorIs(t, err, tt.want)
				if tt.want == ErrBroken {
					require.Contains(t, err.Error(), `"tools/call"`)
				}
				require.Len(t, c.seen(), tt.gets)
			})
		})
	}
}

// An answer in the event a stream ends in, without the blank line that
// would end the event, is the answer, as the go-sdk reads it.
func TestAnswerInAnUnendedEvent(t *testing.T) {
	c := &cutServer{}
	s := c.session(1)
	s.Client = &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		var m struct{ ID json.RawMessage }
		_ = json.NewDecoder(r.Body).Decode(&m)
		return eventStream(`data: {"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"ok":1}}`), nil
	})}
	res, err := s.Call(context.Background(), "tools/call", nil, "", &notes{})
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":1}`, string(res))
}

// A call whose caller gives up while a resumption waits ends at once,
// with the caller's cause.
func TestCutStreamResumptionCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &cutServer{stream: "id: e1\n" + logEvent, get: func(int, string) (*http.Response, error) {
			t.Error("resumed after the caller gave up")
			return nil, errors.New("no")
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := c.session(1).Call(ctx, "tools/call", nil, "", &notes{})
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
