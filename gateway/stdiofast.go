package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager"
)

// The fast path over stdio: the connection's reader (stdioConn.read)
// shows each line it reads to the session's stdioFast before decoding it
// for the go-sdk. A line that holds a tools/call the fast path can serve
// (as over HTTP: see fastpath.go) is answered here, the call made upstream
// by the goroutine that read it while another reads on (stdioConn.read),
// and its answer written as one line among the go-sdk's; a notifications/cancelled for such a call cancels it. Every
// other line goes to the go-sdk as before, in the order it came. What
// could make the reader wait (a tool not listed while servers have not
// had their first say, a client whose mode is not chosen yet) sends the
// call to the go-sdk instead. A call of a client on 2026-07-28 is served
// as a round trip that has asked nothing yet (see fasttrip.go): what the
// server asks turns it into the go-sdk path's round trip. Its progress,
// as the go-sdk path sends it to a stdio client of either generation,
// goes out on the connection, whichever request of the round trip waits.

// stdioFast serves the fast calls of one stdio session. ss is set before
// the first line is read; the other fields are the reader goroutine's.
type stdioFast struct {
	g  *Gateway
	ep *endpoint
	ss *mcp.ServerSession
	s  *session // the gateway's record of ss, once it has one
}

// take serves line (a message the client sent), if the fast path can,
// and reports whether it did; if not, the line is for the go-sdk. A call
// it took is made by run, which the caller runs on a goroutine other
// than the one that reads the next line (nil for a cancellation, served
// already). c is the connection the answer goes out on.
func (f *stdioFast) take(c *stdioConn, line []byte) (taken bool, run func()) {
	// Most lines are not calls: they are not decoded here.
	isCall := bytes.Contains(line, []byte(`"tools/call"`))
	if !isCall && !bytes.Contains(line, []byte(`"notifications/cancelled"`)) {
		return false, nil
	}
	s := f.session()
	if s == nil {
		return false, nil
	}
	req, meta, why := fastMessage(line)
	switch {
	case why == "" && req.Method == "notifications/cancelled":
		return s.cancelFast(req.Params.RequestID), nil
	case why == "" && req.Method == "":
		// An answer: questions of fast calls over stdio go out through
		// the go-sdk (the answerer asks on its session), which takes it.
		return false, nil
	}
	var sh tripShape
	trip := false // a call of 2026-07-28, which may become a round trip
	if why == "" {
		why = f.ready(s)
	}
	if why == "" {
		// A request says its generation in its _meta, else its session's
		// counts, as the go-sdk path reads it (ServerRequest.ProtocolVersion).
		session := f.ss.InitializeParams().ProtocolVersion >= multiRoundTripVersion
		trip = meta.ProtocolVersion >= multiRoundTripVersion || meta.ProtocolVersion == "" && session
		sh.complete = session
		if meta.ProtocolVersion >= multiRoundTripVersion {
			sh.info = f.ep.info
		}
	}
	var server, tool string
	if why == "" {
		// Routed without waiting for servers still to have their first
		// say: a tool not listed yet goes to the go-sdk path, which waits.
		server, tool, why = f.ep.fastRoute(noWait, s, req.Params.Name)
	}
	rc, ok := f.g.src.(rawCaller)
	if why == "" && (!ok || !rc.RawCalls(server)) {
		why = "the server is not one the raw path calls"
	}
	if why == "" && meta.ProtocolVersion == multiRoundTripVersion {
		why = meta.perRequest(req.Params.Meta) // read only for a call the fast path may take
	}
	if why == "" {
		if err := s.begin(); err != nil {
			why = "refused: " + err.Error() // as the go-sdk path refuses it, with the same words
		}
	}
	if why != "" {
		if isCall {
			f.g.log.Debug("fast path: left to the go-sdk", "endpoint", f.ep.path, "transport", "stdio", "tool", req.Params.Name, "why", why)
		}
		return false, nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	call := &stdioCall{cancel: cancel}
	// Registered before the next line is read (it may cancel this call),
	// and for the whole life of the call, hand-over included.
	end := cancel // the session's end ends the call
	if trip {
		end = nil // its round trip follows the session already
	}
	untrack := s.trackFast(req.ID, call.cancelBy, end)
	msg := bytes.Clone(line) // line is the reader's, reused for the next one
	if trip {
		return true, func() {
			if s.hold() {
				defer s.done() // after the answer is written; the call's own count is fastTrip's
			}
			defer untrack()
			defer cancel(nil)
			answer, notRaw := f.g.fastTrip(ctx, s, c, sh, server, tool, req, meta)
			f.served(c, call, msg, server, tool, answer, notRaw, s)
		}
	}
	return true, func() {
		defer s.done() // after the answer is written
		defer untrack()
		defer cancel(nil)
		res, err := f.g.fastCall(ctx, s, nil, c, nil, true, server, tool, req, meta)
		notRaw := errors.Is(err, manager.ErrNotRaw)
		var answer []byte
		if !notRaw {
			answer = fastAnswerOf(s, server, tool, req.ID, res, err)
		}
		f.served(c, call, msg, server, tool, answer, notRaw, s)
	}
}

// served writes the answer of a fast call on c, or, when the raw path
// turned the call down (notRaw: a tool of a 2026-07-28 HTTP server that
// puts arguments in headers), hands it, msg, to the go-sdk, which serves it unless
// the client cancelled it meanwhile.
func (f *stdioFast) served(c *stdioConn, call *stdioCall, msg []byte, server, tool string, answer []byte, notRaw bool, s *session) {
	if notRaw {
		f.g.log.Debug("fast path: left to the go-sdk", "endpoint", f.ep.path, "transport", "stdio", "server", server, "why", "the server is not one the raw path calls")
		if s.ctx.Err() == nil {
			call.handOver(c, msg)
		}
		return
	}
	f.g.fastServed.Add(1)
	_ = c.writeLine(answer[:len(answer)-1]) // without its newline, which writeLine adds in place
	if f.g.log.Enabled(context.Background(), slog.LevelDebug) {
		f.g.log.Debug("fast path: served", "endpoint", f.ep.path, "transport", "stdio", "server", server, "tool", tool)
	}
}

// stdioCall is one fast call over stdio as the client's cancellation
// sees it. Until the call is handed to the go-sdk, a cancellation cancels
// it here; once it is being handed over, the cancellation waits for the
// call to reach the go-sdk and then goes there too, after it, so the
// go-sdk cancels what it serves. The reader (cancelBy) and the call's
// goroutine (handOver) share it.
type stdioCall struct {
	cancel context.CancelCauseFunc

	mu sync.Mutex
	// mu guards the following.
	cancelled bool          // the client cancelled the call before its hand-over
	handing   chan struct{} // made when the hand-over begins, closed when it is done
}

// cancelBy cancels the call for cause and reports whether it did; false
// means the call is the go-sdk's, which the cancellation is for.
func (c *stdioCall) cancelBy(cause error) bool {
	c.mu.Lock()
	handing := c.handing
	c.cancelled = c.cancelled || handing == nil
	c.mu.Unlock()
	if handing != nil {
		<-handing // the call reaches the go-sdk first
		return false
	}
	c.cancel(cause)
	return true
}

// handOver gives the go-sdk the call, msg, on conn, unless the client
// has cancelled it.
func (c *stdioCall) handOver(conn *stdioConn, msg []byte) {
	c.mu.Lock()
	if c.cancelled {
		c.mu.Unlock()
		return
	}
	handing := make(chan struct{})
	c.handing = handing
	c.mu.Unlock()
	defer close(handing)
	conn.handOver(msg)
}

// noWait is a context that has ended: what waits on it does not.
var noWait = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// session is the gateway's record of the stdio session, or nil until it
// has one (the client has not initialized).
func (f *stdioFast) session() *session {
	if f.s == nil {
		f.s = f.g.clients.known(f.ss)
	}
	return f.s
}

// ready says why the session's calls cannot take the fast path now
// without making the reader wait, or "".
func (f *stdioFast) ready(s *session) string {
	p := f.ss.InitializeParams()
	if p == nil {
		return "the session has not initialized"
	}
	s.mu.Lock()
	chosen := s.mode != ""
	s.mu.Unlock()
	if !chosen {
		return "the client's mode is not chosen yet (it has not listed its tools)"
	}
	return ""
}
