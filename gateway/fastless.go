package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// The fast path for the sessionless generation over streamable HTTP. A
// client on 2026-07-28 has no session: each POST stands alone and says in
// its _meta who sends it and what it can answer. The go-sdk's handler
// without sessions makes a session for that one request, runs it through
// the endpoint's middleware and the tool's handler, which makes the call
// under the client's holder (see clientTable.holder) as a round trip, and
// answers on an event stream. The fast path serves such a tools/call
// itself: it checks what the go-sdk's handler checks before the call
// (headers, the _meta the request must carry), routes it as the go-sdk
// path does, and makes it as a fast round trip under the same holder (see
// fasttrip.go), so that what the server asks during it goes back as input
// requests and the client's next request, with its answers and the
// request state, is served by the go-sdk path's round trip. The answer
// goes out as the go-sdk sends it: the same headers, one event, the result
// with what the go-sdk adds to one of that generation (tripShape). What
// it does not serve (another method, a call on a toolset's endpoint, one
// that wants progress or log messages, a tool that binds arguments to
// headers, anything the go-sdk would refuse) goes to the go-sdk as before; a debug log says why.

// fastless serves the sessionless generation's requests on ep ahead of
// next, the go-sdk's handler without sessions: a call the fast path
// takes is answered here, everything else goes to next as it came.
func (ep *endpoint) fastless(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && ep.g.fastSessionless(ep, w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fastSessionless serves r, a POST of the sessionless generation on ep,
// if the fast path can, and reports whether it did. If not, r's body is
// as it came, for the go-sdk to read.
func (g *Gateway) fastSessionless(ep *endpoint, w http.ResponseWriter, r *http.Request) bool {
	if why := sessionlessHeaders(ep, r); why != "" {
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "why", why)
		return false
	}
	body, err := readBody(r)
	if err != nil {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	req, meta, why := fastMessage(body)
	switch {
	case why != "":
	case req.Method != "tools/call":
		// An answer or a cancellation has no session to find its call
		// in: the go-sdk answers it.
		why = "method " + req.Method
	case meta.ProtocolVersion != sessionlessVersion:
		why = "the _meta protocol version is not the header's"
	case r.Header.Get("Mcp-Method") != req.Method || r.Header.Get("Mcp-Name") != req.Params.Name:
		why = "Mcp-Method or Mcp-Name headers that do not match the body"
	case progressToken(req.Params.Meta, meta) != nil:
		// Its progress goes on whichever of the round trip's requests
		// waits: the go-sdk path's to carry.
		why = "progress wanted on 2026-07-28"
	default:
		why = meta.perRequest(req.Params.Meta)
	}
	if why != "" {
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "why", why)
		return false
	}
	// The record the go-sdk path makes of the request's own session: who
	// the client is, for its mode, its names and its holder.
	c := Client{Transport: "http", Endpoint: ep.path, Since: time.Now()}
	if meta.client != nil {
		c.Name, c.Version = meta.client.Name, meta.client.Version
	}
	rs := &session{client: c, budget: g.budgetFor(c.Name), sessionless: true, from: r.Header.Get(sessionlessHeader)}
	server, tool, why := ep.fastRoute(r.Context(), rs, req.Params.Name)
	if rc, ok := g.src.(rawCaller); why == "" && (!ok || !rc.RawCalls(server)) {
		why = "the server is not one the raw path calls"
	}
	if why != "" {
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "tool", req.Params.Name, "why", why)
		return false
	}
	h, release, err := g.clients.holder(ep, rs)
	if err != nil {
		// Refused as the go-sdk path refuses it, with the same words.
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "why", "refused: "+err.Error())
		return false
	}
	defer release() // once the call and this request count on h
	if err := h.begin(); err != nil {
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "why", "refused: "+err.Error())
		return false
	}
	if h.hold() {
		defer h.done() // after the answer is written; the call's own count is fastTrip's
	}
	// The request is the whole call: when its client stops waiting, the
	// call is abandoned, as the go-sdk's handler is cancelled then.
	answer, notRaw := g.fastTrip(r.Context(), h, nil, tripShape{info: ep.info, complete: true}, server, tool, req, meta)
	if notRaw {
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "server", server, "why", "the server is not one the raw path calls")
		return false
	}
	g.fastServed.Add(1)
	hdr := w.Header()
	hdr["Cache-Control"] = sseCacheControl
	hdr["Content-Type"] = sseContentType
	hdr["Connection"] = sseConnection
	w.WriteHeader(http.StatusOK)
	_ = writeEvent(w, answer)
	if g.log.Enabled(context.Background(), slog.LevelDebug) {
		g.log.Debug("fast path: served", "endpoint", ep.path, "transport", "http", "generation", sessionlessVersion, "server", server, "tool", tool)
	}
	return true
}

// The headers of the go-sdk's event stream answering a sessionless
// request, one slice each for all (see jsonContentType: never edited in
// place).
var (
	sseCacheControl = []string{"no-cache, no-transform"}
	sseContentType  = []string{"text/event-stream"}
	sseConnection   = []string{"keep-alive"}
)

// sessionlessHeaders says why r, a request of the sessionless
// generation, cannot take the fast path by its headers, or "". What the
// go-sdk would refuse goes to it, to be refused in its words.
func sessionlessHeaders(ep *endpoint, r *http.Request) string {
	if ep.sel == oneToolset {
		return "a toolset's endpoint"
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v != sessionlessVersion {
		return "protocol version " + v
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return "content type " + ct
	}
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		return "the client does not accept what the go-sdk requires"
	}
	if len(r.Header.Values("Last-Event-Id")) > 0 {
		return "a Last-Event-ID header"
	}
	for k := range r.Header {
		if len(k) > len("Mcp-Param-") && strings.EqualFold(k[:len("Mcp-Param-")], "Mcp-Param-") {
			return "an Mcp-Param header"
		}
	}
	return ""
}
