package manager_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A standalone SSE stream that drops repeatedly, at the logic tier: the
// go-sdk's streamable HTTP handler serving the demo server, and the
// manager's own HTTP transport and StreamableClientTransport
// (MaxRetries 1), talking over an in-memory network inside a synctest
// bubble, so that an hour of drops takes a fraction of a second and every
// instant is exact.
//
// What the SDK (v1.8.0, mcp/streamable.go) does when the standalone GET
// stream ends, cleanly or by a cut connection (both end processStream's
// scan the same way, without an error of their own):
//
//   - handleSSE counts retries without progress; progress is a new event id
//     since the previous end. With MaxRetries 1, the first end without
//     progress is retried, the second fails the connection ("exceeded 1
//     retries without progress"), without another GET.
//   - connectSSE re-GETs after the stream's retry: field if it sent one
//     (otherwise 1–2s, jittered), with Last-Event-ID if it saw an id.
//   - A re-GET answered 500 fails the connection (checkResponse: transient
//     status wrapped in ErrRejected); a 404 fails it with ErrSessionMissing.
//
// A server only sends event ids with an event store, and only on events it
// sends: an idle standalone stream of a server without one is never
// "progress", so each session survives one drop and dies at the second.

// pipeNet is an in-memory network for a synctest bubble, where sockets
// cannot be used: dial hands the other end of a net.Pipe to Accept.
type pipeNet struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (n *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case n.conns <- server:
		return client, nil
	case <-n.closed:
	case <-ctx.Done():
	}
	client.Close()
	server.Close()
	return nil, errors.New("connection refused")
}

func (n *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.closed:
		return nil, net.ErrClosed
	}
}

func (n *pipeNet) Close() error {
	n.once.Do(func() { close(n.closed) })
	return nil
}

func (n *pipeNet) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// sseFault is what sseServer's middleware does to standalone SSE streams
// (ends each stream after a while, sends an SSE retry: field).
type sseFault struct {
	dropAfter time.Duration // each GET stream ends this long after it began
	retry     time.Duration // sent as each stream's SSE retry: field, if set
	reset     bool          // cut the connection instead of ending the response
	reGet     int           // if set, the status answering a session's later GETs
	resumable bool          // the handler has an event store: event ids, replay
}

// getRecord is one GET the server saw.
type getRecord struct {
	at, end     time.Time // end is zero while it runs
	session     string
	lastEventID string
	status      int // the middleware's answer; 0: the handler served it
}

// sseServer serves the demo server over streamable HTTP on a pipeNet, with
// an sseFault in front of its standalone SSE streams. It is stopped, with
// every session it still has, when the test ends.
type sseServer struct {
	net *pipeNet
	mcp *mcp.Server
	srv *http.Server

	mu sync.Mutex
	// mu guards the following.
	gets []getRecord
}

// connKey keys the server side of a request's connection in its context.
type connKey struct{}

// sseURL is the endpoint declared for an sseServer; the pipeNet ignores
// the address.
const sseURL = "http://mcp.test/mcp"

func startSSEServer(t *testing.T, f sseFault) *sseServer {
	t.Helper()
	s := &sseServer{net: newPipeNet(), mcp: demo.NewServer()}
	var opts *mcp.StreamableHTTPOptions
	if f.resumable {
		opts = &mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)}
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, opts)
	s.srv = &http.Server{
		Handler:     s.middleware(f, h),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.srv.Serve(s.net)
	}()
	t.Cleanup(func() {
		s.srv.Close()
		<-served
		for ss := range s.mcp.Sessions() { // those whose client skipped the DELETE (404)
			_ = ss.Close()
		}
	})
	return s
}

func (s *sseServer) middleware(f sseFault, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			next.ServeHTTP(w, r)
			return
		}
		rec := getRecord{at: time.Now(), session: r.Header.Get("Mcp-Session-Id"), lastEventID: r.Header.Get("Last-Event-Id")}
		s.mu.Lock()
		later := false
		for _, g := range s.gets {
			later = later || g.session == rec.session
		}
		if later {
			rec.status = f.reGet
		}
		i := len(s.gets)
		s.gets = append(s.gets, rec)
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.gets[i].end = time.Now()
			s.mu.Unlock()
		}()

		if rec.status != 0 {
			http.Error(w, http.StatusText(rec.status), rec.status)
			return
		}
		if f.retry > 0 {
			w = &retryWriter{ResponseWriter: w, retry: f.retry}
		}
		if f.reset {
			conn := r.Context().Value(connKey{}).(net.Conn)
			cut := time.AfterFunc(f.dropAfter, func() { conn.Close() })
			defer cut.Stop()
			next.ServeHTTP(w, r)
			return
		}
		// The handler holds the stream until the request's context ends,
		// then returns: the response ends cleanly.
		ctx, cancel := context.WithTimeout(r.Context(), f.dropAfter)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// getsSeen returns the GETs so far, in arrival order.
func (s *sseServer) getsSeen() []getRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]getRecord(nil), s.gets...)
}

// retryWriter starts an event stream with an SSE retry: field.
type retryWriter struct {
	http.ResponseWriter
	retry time.Duration
	wrote bool
}

func (w *retryWriter) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if !w.wrote && code == http.StatusOK && w.Header().Get("Content-Type") == "text/event-stream" {
		fmt.Fprintf(w.ResponseWriter, "retry: %d\n\n", w.retry.Milliseconds())
	}
	w.wrote = true
}

func (w *retryWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *retryWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *retryWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sseManager returns a manager whose own HTTP transport dials srv, and a
// timeline of its events. Invariant V (invariants_test.go) is checked on
// every event when the test ends, after the manager is closed. Start srv
// first: it must outlive the manager, whose Close ends its sessions.
func sseManager(t *testing.T, srv *sseServer) (*manager.Manager, *timeline) {
	t.Helper()
	var (
		rec   *events.Subscription
		bus   *events.Bus
		start uint64
	)
	t.Cleanup(func() { checkRecorded(t, rec, bus, start) }) // runs after newManager's Close
	m := newManager(t, manager.Options{Rand: constRand(0)})
	manager.SetHTTPDialer(m, srv.net.dial)
	bus = m.Bus()
	start = bus.Published()
	rec = bus.Subscribe(events.SubscribeOptions{QueueSize: recorderQueue})
	return m, watch(t, m)
}

// checkRecorded checks invariant V on what rec received from bus, which
// must be closed by now: contiguous sequence numbers, delivered+dropped ==
// published, one event per state change of the lifecycle.
func checkRecorded(t *testing.T, rec *events.Subscription, bus *events.Bus, start uint64) {
	var got []events.Event
	closed := false
	for {
		e, ok, err := rec.TryRecv()
		if errors.Is(err, events.ErrClosed) {
			closed = true
			break
		}
		require.NoError(t, err)
		if !ok {
			break
		}
		got = append(got, e)
	}
	require.True(t, closed, "the manager's bus is not closed")
	delivered, dropped := rec.Stats()
	evs, problems := checkSeqs(got, start, bus.Published())
	if published := bus.Published() - start; delivered+dropped != published {
		problems = append(problems, fmt.Sprintf("V: recorder accounting: delivered %d + dropped %d != published %d", delivered, dropped, published))
	}
	problems = append(problems, checkLifecycle(evs, closed)...)
	for _, p := range problems {
		t.Error(p)
	}
}

// sleepUntil sleeps (fake time) until the timeline's offset d.
func sleepUntil(t *testing.T, tl *timeline, d time.Duration) {
	t.Helper()
	now := time.Since(tl.start)
	require.GreaterOrEqual(t, d, now, "already past %s", d)
	time.Sleep(d - now)
}

// echoAt calls the demo's echo and requires its text back; it returns the
// timeline offset at which the call returned.
func echoAt(t *testing.T, m *manager.Manager, tl *timeline, msg string) time.Duration {
	t.Helper()
	res, err := m.Call(context.Background(), "x.echo", map[string]any{"text": msg}, manager.CallOptions{Timeout: time.Minute})
	require.NoError(t, err, "echo %q", msg)
	require.Equal(t, msg, text(t, res))
	return time.Since(tl.start)
}

// sseDropCase is a standalone stream that the SDK gives up on, and how the
// host must react.
type sseDropCase struct {
	name  string
	fault sseFault
	// failAfter is when the SDK fails a session, counted from its start.
	failAfter time.Duration
	err       string // of the disconnected event; {session} is the session's id
	// reconnect are the lifecycle events after disconnected; the connected
	// one comes delay after it.
	reconnect []events.Kind
	delay     time.Duration
	// inflight is the kind of the error of a call in flight when the
	// session fails.
	inflight error
	cycles   int // sessions that fail within an hour
}

var sseDropCases = []sseDropCase{
	{
		name:  "stream ends cleanly",
		fault: sseFault{dropAfter: time.Minute, retry: 2 * time.Second},
		// Dropped at 60s, re-GET at 62s, dropped at 122s: a second end
		// without progress, with MaxRetries 1.
		failAfter: 122 * time.Second,
		err:       `server "x": session: connection lost: standalone SSE stream: exceeded 1 retries without progress (session ID: {session})`,
		reconnect: []events.Kind{events.KindBackoff, events.KindConnecting, events.KindConnected}, delay: 10 * ms,
		inflight: manager.ErrDisconnected,
		cycles:   29, // one per 122.01s
	},
	{
		name:      "connection cut",
		fault:     sseFault{dropAfter: time.Minute, retry: 2 * time.Second, reset: true},
		failAfter: 122 * time.Second,
		err:       `server "x": session: connection lost: standalone SSE stream: exceeded 1 retries without progress (session ID: {session})`,
		reconnect: []events.Kind{events.KindBackoff, events.KindConnecting, events.KindConnected}, delay: 10 * ms,
		inflight: manager.ErrDisconnected,
		cycles:   29,
	},
	{
		name:      "re-GET answered 500",
		fault:     sseFault{dropAfter: time.Minute, retry: 2 * time.Second, reGet: http.StatusInternalServerError},
		failAfter: 62 * time.Second,
		err:       `server "x": session: connection lost: rejected by transport: standalone SSE stream: Internal Server Error`,
		reconnect: []events.Kind{events.KindBackoff, events.KindConnecting, events.KindConnected}, delay: 10 * ms,
		inflight: manager.ErrDisconnected,
		cycles:   58, // one per 62.01s
	},
	{
		name:      "re-GET answered 404",
		fault:     sseFault{dropAfter: time.Minute, retry: 2 * time.Second, reGet: http.StatusNotFound},
		failAfter: 62 * time.Second,
		err:       `server "x": session: connection lost: standalone SSE stream: failed to connect (session ID: {session}): session not found`,
		// ErrSessionMissing: a new session at once (an expired HTTP session
		// is re-initialized, not backed off), every time, as each had
		// proven itself by living past backoff.max.
		reconnect: []events.Kind{events.KindConnecting, events.KindConnected, events.KindSessionReinitialized},
		inflight:  mcp.ErrSessionMissing,
		cycles:    58, // one per 62s
	},
}

// addSSEDropServer starts the server of tc and declares it as "x" on a new
// manager (quick backoff, no idle close), and returns when it is connected,
// at offset 0 of the returned timeline.
func addSSEDropServer(t *testing.T, tc sseDropCase) (*sseServer, *manager.Manager, *timeline) {
	t.Helper()
	srv := startSSEServer(t, tc.fault)
	m, tl := sseManager(t, srv)
	require.NoError(t, m.Add("x", decode(t, quick(map[string]any{"url": sseURL, "timeouts": map[string]any{"idle": 0}}))))
	evs := tl.until("x", events.KindConnected, time.Second)
	require.Zero(t, evs[len(evs)-1].At)
	return srv, m, tl
}

// deadAt reads the status at the instant the SDK failed the session
// (failAt), once everything due at that instant has run, and says what is
// wrong with it, if anything: it must not call the dead session connected
// or healthy. It may already be the next session (re-initialized at once
// after a 404).
func deadAt(t *testing.T, m *manager.Manager, tl *timeline, tc sseDropCase, failAt time.Duration) (problem string) {
	t.Helper()
	sleepUntil(t, tl, failAt)
	synctest.Wait()
	st := mustStatus(t, m, "x")
	if st.State == manager.StateConnected && st.ConnectedAt.Before(tl.start.Add(failAt)) || st.Healthy && tc.delay > 0 {
		return fmt.Sprintf("at %s, when its session is dead, the status says %s (healthy %v) since %s",
			failAt, st.State, st.Healthy, st.ConnectedAt.Sub(tl.start))
	}
	want := manager.StateBackoff // until the next attempt, delay later
	if tc.delay == 0 {
		want = manager.StateConnected // the next session, at once
	}
	if st.State != want {
		return fmt.Sprintf("at %s the status says %s, want %s", failAt, st.State, want)
	}
	return ""
}

// The standalone SSE stream of a server without resumption drops every 60s
// (or its reconnecting GET is refused), for an hour of fake time. The SDK
// re-GETs after the stream's retry: field (2s); when it gives up, the
// session fails, and the host knows at that instant: no "connected but
// dead" status, a disconnected event, a call served as soon as the next
// session is up. Between failures the session is connected, healthy and
// serves calls, even while the stream is down. The cycle repeats for the
// hour without the breaker opening. G: the bubble exits; V: sseManager.
func TestStandaloneSSEGivesUp(t *testing.T) {
	for _, tc := range sseDropCases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, m, tl := addSSEDropServer(t, tc)

				var connected []time.Duration // when each session came up
				c := time.Duration(0)
				for c+tc.failAfter <= time.Hour {
					connected = append(connected, c)
					failAt := c + tc.failAfter

					// The stream dropped at +60s and is re-requested at +62s:
					// in between, the session is connected, healthy and
					// serves calls at once (POSTs do not need the stream).
					sleepUntil(t, tl, c+61*time.Second)
					gets := srv.getsSeen()
					g := gets[len(gets)-1]
					require.Equal(t, tl.start.Add(c), g.at, "the session's GET starts with it")
					require.Equal(t, tl.start.Add(c+time.Minute), g.end, "the stream dropped after 60s")
					session := g.session
					st := mustStatus(t, m, "x")
					require.Equal(t, manager.StateConnected, st.State)
					require.True(t, st.Healthy)
					require.Equal(t, tl.start.Add(c), st.ConnectedAt)
					require.Equal(t, c+61*time.Second, echoAt(t, m, tl, "in the gap"))

					require.Empty(t, deadAt(t, m, tl, tc, failAt))
					evs := lifecycle(tl.until("x", events.KindDisconnected, time.Second))
					require.Equal(t, []events.Kind{events.KindDisconnected}, kinds(evs), "nothing else since connected (session %d)", len(connected))
					require.Equal(t, failAt, evs[0].At, "disconnected the instant the SDK gives up")
					require.Equal(t, strings.ReplaceAll(tc.err, "{session}", session), evs[0].Fields["error"])
					require.Equal(t, failAt+tc.delay, echoAt(t, m, tl, "right after"), "served once the next session is up")

					evs = lifecycle(tl.until("x", tc.reconnect[len(tc.reconnect)-1], time.Second))
					require.Equal(t, tc.reconnect, kinds(evs))
					for _, e := range evs {
						if e.Kind == events.KindConnected {
							c = e.At
						}
					}
					require.Equal(t, failAt+tc.delay, c)
				}
				require.Len(t, connected, tc.cycles, "sessions that failed within the hour")

				sleepUntil(t, tl, time.Hour)
				st := mustStatus(t, m, "x")
				require.Equal(t, manager.StateConnected, st.State)
				require.True(t, st.Healthy)
				require.Equal(t, tl.start.Add(c), st.ConnectedAt)
				require.Empty(t, lifecycle(tl.quiet(time.Millisecond)))

				// Each failed session had exactly two GETs: the first
				// dropped after 60s, the re-GET came 2s later (retry:)
				// without Last-Event-ID (nothing had an id), and ended when
				// the session failed.
				bySession := map[string][]getRecord{}
				var order []string
				for _, g := range srv.getsSeen() {
					if bySession[g.session] == nil {
						order = append(order, g.session)
					}
					bySession[g.session] = append(bySession[g.session], g)
				}
				require.Len(t, order, tc.cycles+1, "one session per cycle, and the live one")
				for i, session := range order[:tc.cycles] {
					at := tl.start.Add(connected[i])
					require.Equal(t, []getRecord{
						{at: at, end: at.Add(time.Minute), session: session},
						{at: at.Add(62 * time.Second), end: at.Add(tc.failAfter), session: session, status: tc.fault.reGet},
					}, bySession[session], "session %d", i)
				}
			})
		})
	}
}

// A call in flight when the SDK gives up on the standalone stream: the host
// must say so at once — not connected, not healthy, disconnected — and the
// call must fail then, saying it may or may not have run (ErrDisconnected;
// after a 404, ErrSessionMissing, as for any expired HTTP session). The
// next call works on a new session.
//
// ClientSession.Wait returns only once the connection's Close is done, and
// Close first sends a DELETE (skipped after a 404) that a go-sdk server
// holds until its requests in flight finish; the SDK gives up on it after
// 5s (closeDeleteTimeout), and meanwhile the call in flight (its POST has
// no response headers yet: the server sends them with the result) stays
// blocked. The host takes the DELETE as the sign: it waits
// SessionEndGrace for Wait's reason, then reports the session lost and
// ends the connection's requests, the blocked call with them.
func TestCallInFlightWhenStandaloneSSEGivesUp(t *testing.T) {
	for _, tc := range sseDropCases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, m, tl := addSSEDropServer(t, tc)
				failAt := tc.failAfter

				// At 61s (stream down, session fine) a call starts that the
				// server would answer 10s after failAt.
				sleepUntil(t, tl, 61*time.Second)
				type result struct {
					err error
					at  time.Duration
				}
				inflight := make(chan result, 1)
				long := (failAt - 61*time.Second + 10*time.Second).Milliseconds()
				go func() {
					_, err := m.Call(context.Background(), "x.sleep", map[string]any{"ms": long}, manager.CallOptions{Timeout: 5 * time.Minute})
					inflight <- result{err, time.Since(tl.start)}
				}()

				// Every symptom is reported (assert), then the recovery is
				// required.
				if tc.delay > 0 { // the DELETE is held: SessionEndGrace passes first
					failAt += manager.SessionEndGrace
				}
				assert.Empty(t, deadAt(t, m, tl, tc, failAt))
				r := <-inflight
				assert.Equal(t, failAt, r.at, "the call in flight fails when its session dies")
				assert.ErrorIs(t, r.err, manager.ErrInvocationFailed)
				assert.ErrorIs(t, r.err, tc.inflight, "%q is not of kind %v", r.err, tc.inflight)
				assert.True(t, strings.HasPrefix(r.err.Error(), `server "x": tools/call "sleep": `), r.err.Error())
				assert.Contains(t, r.err.Error(), "may not have run")

				evs := lifecycle(tl.until("x", tc.reconnect[len(tc.reconnect)-1], 10*time.Second))
				require.Equal(t, append([]events.Kind{events.KindDisconnected}, tc.reconnect...), kinds(evs))
				assert.Equal(t, failAt, evs[0].At, "disconnected the instant the SDK gives up")
				echoAt(t, m, tl, "on the next session")
			})
		})
	}
}

// A dropping standalone SSE stream with resumption: a server with an event
// store sends one log notification a minute on its standalone stream, which
// drops every 60s for an hour. Every drop follows progress (a new event
// id), so the SDK keeps resuming the stream (Last-Event-ID, after retry:
// 2s) and the one session stays connected and healthy for the whole hour:
// no disconnected event, calls work, and every notification becomes a
// notice, in order — those sent while the stream was down are replayed when it
// resumes. G: the bubble exits; V: sseManager.
func TestStandaloneSSEResumes(t *testing.T) {
	for _, reset := range []bool{false, true} {
		name := "stream ends cleanly"
		if reset {
			name = "connection cut"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, m, tl := addSSEDropServer(t, sseDropCase{fault: sseFault{dropAfter: time.Minute, retry: 2 * time.Second, reset: reset, resumable: true}})

				// Tick i at 60i+31s: odd seconds, never at a drop (62k+60s)
				// or a re-GET (62k+62s). Every 62s stream sees one.
				const ticks = 60
				tickAt := func(i int) time.Duration { return time.Duration(60*i+31) * time.Second }
				calls := 0
				for i := range ticks {
					sleepUntil(t, tl, tickAt(i))
					st := mustStatus(t, m, "x")
					require.Equal(t, manager.StateConnected, st.State, "tick %d", i)
					require.True(t, st.Healthy, "tick %d", i)
					require.Equal(t, tl.start, st.ConnectedAt, "tick %d: still the first session", i)

					var sessions []*mcp.ServerSession
					for ss := range srv.mcp.Sessions() {
						sessions = append(sessions, ss)
					}
					require.Len(t, sessions, 1)
					require.NoError(t, sessions[0].Log(context.Background(), &mcp.LoggingMessageParams{
						Level: "info", Logger: "sse-drop", Data: fmt.Sprintf("tick %d", i)}))
					if i%10 == 0 || i == 16 { // at tick 16 the stream is down
						require.Equal(t, tickAt(i), echoAt(t, m, tl, fmt.Sprintf("call at tick %d", i)))
						calls++
					}
				}
				sleepUntil(t, tl, time.Hour)

				// The GETs: one every 62s (60s stream, retry: 2s), all of
				// the one session; every re-GET resumes from a new
				// Last-Event-ID.
				gets := srv.getsSeen()
				require.Len(t, gets, 59, "GETs at 0s, 62s, … 3596s")
				for k, g := range gets {
					require.Equal(t, tl.start.Add(time.Duration(62*k)*time.Second), g.at, "GET %d", k)
					require.Equal(t, gets[0].session, g.session)
					if k < len(gets)-1 {
						require.Equal(t, g.at.Add(time.Minute), g.end, "GET %d dropped after 60s", k)
					}
					if k == 0 {
						require.Empty(t, g.lastEventID)
						continue
					}
					require.NotEmpty(t, g.lastEventID, "GET %d resumes", k)
					require.NotEqual(t, gets[k-1].lastEventID, g.lastEventID, "GET %d: progress since the last drop", k)
				}

				// Every tick arrived, in order: at once while the stream was
				// up, with the next GET when it was down.
				toolCalls := 0
				for _, e := range tl.quiet(time.Millisecond) {
					switch e.Kind {
					case events.KindToolCall:
						toolCalls++
					default:
						t.Errorf("unexpected %s event at %s: %v", e.Kind, e.At, e.Fields)
					}
				}
				require.Equal(t, calls, toolCalls)
				notes := tl.heard(0)
				require.Len(t, notes, ticks, "every notification became a notice")
				var replayed []int
				for i, e := range notes {
					require.Equal(t, "notifications/message", e.Fields["method"])
					require.Equal(t, fmt.Sprintf("tick %d", i), e.Fields["params"].(map[string]any)["data"])
					want := tickAt(i)
					for _, g := range gets {
						if start := g.at.Sub(tl.start); start > want {
							if start-2*time.Second < want { // sent while the stream was down
								want = start
								replayed = append(replayed, i)
							}
							break
						}
					}
					require.Equal(t, want, e.At, "tick %d", i)
				}
				require.Equal(t, []int{16, 47}, replayed, "ticks sent while the stream was down")

				st := mustStatus(t, m, "x")
				require.Equal(t, manager.StateConnected, st.State)
				require.True(t, st.Healthy)
				require.Equal(t, tl.start, st.ConnectedAt, "one session for the whole hour")
			})
		})
	}
}
