package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/mcpvisor/mcpvisor/manager"
)

// The fast path serves the commonest request of all, a client's
// tools/call, without the go-sdk's server session: over streamable HTTP,
// a POST whose body is one tools/call on a session the go-sdk already
// knows is decoded just enough to route it (id, tool name, arguments and
// _meta kept as raw JSON), checked as the go-sdk path checks it (the
// endpoint's routes, a toolset's included, so hidden and unknown tools
// are not reached; the client's mode; its names, translated to the
// endpoint's for a client given a name budget of its own; its cap on
// calls in flight), and sent to the
// manager's raw call path, whose result goes back to the client as the
// server wrote it. The raw path serves spawned stdio servers and
// streamable HTTP servers (a POST on the manager's own session with the
// server) of either protocol generation. A call that wants progress
// gets it on the call's response (an event stream then, as for the
// server's questions: see fastask.go), under its own token, before the result: the manager sends the server a
// token of its own, unique on that connection, since two clients may
// choose the same. It serves clients of both protocol generations, over
// stdio (stdiofast.go) and over HTTP, where a client on 2026-07-28 has no
// session (fastless.go): a call of a client on 2026-07-28, which cannot
// be sent requests, opens a round trip as the go-sdk path's does, so that
// what the server asks during it reaches the client as input requests
// (see fasttrip.go), and whose progress goes out on the connection as
// the go-sdk path sends it; its _meta is read as the go-sdk reads it (the
// client's capabilities and information, the log level it wants), and
// the protocol's own members of it are not sent upstream. A client that
// set a logging level hears the server's log messages on the call's
// response (or its stdio connection), before the result, filtered at its
// level as the go-sdk filters them (see relayFastLogs). Anything else
// (another method, a batch, a request state, a client on another mode, a
// 2026-07-28 call whose _meta names a log level, or over HTTP one that
// wants progress or comes on a toolset's endpoint, a legacy SSE or
// in-process server, a tool of a 2026-07-28 HTTP server that puts
// arguments in headers) goes to the go-sdk as before; a debug log says
// why.

// FastPathEnv turns the fast path on ("on") or off ("off") when
// Options.FastPath is "".
const FastPathEnv = "MCPVISOR_FASTPATH"

// DefaultFastPath is whether the fast path is on when neither
// Options.FastPath nor FastPathEnv says: it is, since what it serves
// behaves as the go-sdk path does (the gateway's tests pass either way).
const DefaultFastPath = true

// fastPathOn resolves Options.FastPath.
func fastPathOn(setting string) (bool, error) {
	if setting == "" {
		setting = os.Getenv(FastPathEnv)
	}
	switch strings.ToLower(strings.TrimSpace(setting)) {
	case "":
		return DefaultFastPath, nil
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("fast path setting %q: want on or off", setting)
}

// rawCaller is the Source's raw call path (manager.Manager has it).
type rawCaller interface {
	RawCalls(server string) bool
	CallRaw(ctx context.Context, server, tool string, args, meta json.RawMessage, opts manager.CallOptions) (json.RawMessage, error)
}

// fastRequest is what the fast path reads of a request.
type fastRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	// Present on a response: the client's answer to a question.
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      json.RawMessage `json:"_meta"`
		// Present only on what the fast path leaves to the go-sdk.
		Task         json.RawMessage `json:"task"`
		RequestState json.RawMessage `json:"requestState"`
		RequestID    json.RawMessage `json:"requestId"` // of notifications/cancelled
	} `json:"params"`
}

// fastMeta is what the fast path reads of a call's _meta.
type fastMeta struct {
	ProgressToken   json.RawMessage `json:"progressToken"`
	ProtocolVersion string          `json:"io.modelcontextprotocol/protocolVersion"`
	TraceParent     string          `json:"traceparent"`
	TraceState      string          `json:"tracestate"`

	// Of a request that says in its _meta that it is on 2026-07-28 (see
	// perRequest): what its client declared it can answer, who it says
	// it is, and the _meta that goes upstream in place of the client's.
	caps     *mcp.ClientCapabilities
	client   *mcp.Implementation // nil when the request does not say
	forward  json.RawMessage
	stripped bool // forward replaces the client's _meta
}

// fastMessage reads body, one JSON-RPC message, as the fast path does:
// the request and its _meta, and why the fast path leaves it to the
// go-sdk ("" when it takes it). Besides a tools/call, it takes a client's
// notifications/cancelled (for the caller to look for the fast call it
// cancels) and a client's answer (no method; an id, a result or an
// error), for the caller to look for the question it answers.
func fastMessage(body []byte) (req fastRequest, meta fastMeta, why string) {
	switch t := bytes.TrimLeft(body, " \t\r\n"); {
	case len(t) == 0 || t[0] != '{':
		return req, meta, "not a single JSON-RPC message"
	case !json.Valid(body):
		return req, meta, "not JSON the fast path reads"
	}
	switch ok, foreign := scanFast(body, &req); {
	case foreign:
		return req, meta, "a member named in another case"
	case !ok && unmarshalAfresh(body, &req) != nil:
		return req, meta, "not JSON the fast path reads"
	}
	switch {
	case req.JSONRPC != "2.0":
		return req, meta, "not JSON-RPC 2.0"
	case req.Method == "" && (len(req.ID) > 0 || len(req.Result) > 0 || len(req.Error) > 0):
		// An answer, or what claims to be one: one to a question of a
		// fast call is the fast path's, however malformed, for the
		// question to end with an error rather than wait on.
		return req, meta, ""
	case req.Method == "notifications/cancelled" && len(req.ID) == 0:
		return req, meta, ""
	case req.Method != "tools/call":
		return req, meta, "method " + req.Method
	case len(req.ID) == 0 || string(req.ID) == "null":
		return req, meta, "no request id"
	case req.ID[0] != '"' && req.ID[0] != '-' && (req.ID[0] < '0' || req.ID[0] > '9'):
		return req, meta, "a request id that is neither a string nor a number"
	case len(req.Params.Task) > 0 || len(req.Params.RequestState) > 0:
		return req, meta, "a task or request state"
	case !objectOrNothing(req.Params.Arguments):
		return req, meta, "arguments that are not an object" // refused in the go-sdk path's words
	}
	if len(req.Params.Meta) == 0 || string(req.Params.Meta) == "null" {
		return req, meta, ""
	}
	switch {
	case unmarshalMeta(req.Params.Meta, &meta) != nil:
		why = "_meta is not an object"
	case meta.ProtocolVersion > multiRoundTripVersion:
		why = "protocol version " + meta.ProtocolVersion
	}
	return req, meta, why
}

// unmarshalAfresh is json.Unmarshal into a zeroed req. It decodes into
// a value of its own, so that the caller's stays off the heap on the
// path that needs no decoder.
func unmarshalAfresh(body []byte, req *fastRequest) error {
	into := new(fastRequest)
	err := json.Unmarshal(body, into)
	*req = *into
	return err
}

// unmarshalMeta is json.Unmarshal(raw, meta), as unmarshalAfresh (meta
// starts empty).
func unmarshalMeta(raw json.RawMessage, meta *fastMeta) error {
	into := new(fastMeta)
	err := json.Unmarshal(raw, into)
	*meta = *into
	return err
}

// fastPost serves r, a POST of session s on endpoint ep, if the fast path
// can; it reports whether it did. If not, r's body is as it came, for the
// go-sdk to read.
func (g *Gateway) fastPost(ep *endpoint, s *session, w http.ResponseWriter, r *http.Request) bool {
	// A client answering a question of a fast call is heard whatever its
	// headers: the go-sdk knows no such question.
	why := fastHeaders(ep, s, r)
	if why != "" && !s.asking() {
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "why", why)
		return false
	}
	body, err := readBody(r)
	if err != nil {
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errReader{err}))
		return false
	}
	if g.fastBody(ep, s, w, r, body, why) {
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // as it came, for the go-sdk
	return false
}

// fastBody serves r, whose body has been read, if the fast path can; why
// is why its headers leave it to the go-sdk, or "".
func (g *Gateway) fastBody(ep *endpoint, s *session, w http.ResponseWriter, r *http.Request, body []byte, why string) bool {
	req, meta, read := fastMessage(body)
	switch {
	case read == "" && req.Method == "":
		if s.answerFast(req.ID, body) {
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		why = "an answer to no question of a fast call"
	case why != "":
	case read != "":
		why = read
	case meta.ProtocolVersion >= multiRoundTripVersion:
		why = "protocol version " + meta.ProtocolVersion
	case req.Method == "notifications/cancelled":
		if s.cancelFast(req.Params.RequestID) {
			w.WriteHeader(http.StatusAccepted)
			return true
		}
		why = "a cancellation of no fast call"
	}
	if why != "" {
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "why", why)
		return false
	}
	server, tool, why := ep.fastRoute(r.Context(), s, req.Params.Name)
	if why != "" {
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "tool", req.Params.Name, "why", why)
		return false
	}
	if err := s.begin(); err != nil {
		// Refused as the go-sdk path refuses it, with the same words.
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "why", "refused: "+err.Error())
		return false
	}
	defer s.done() // after the answer is written
	out := &fastStream{w: w, sessionID: s.ss.ID()}
	res, err := g.fastCall(r.Context(), s, out, out, nil, false, server, tool, req, meta)
	if errors.Is(err, manager.ErrNotRaw) && !out.started() {
		// CallRaw decides on ErrNotRaw before it sends the server
		// anything, so no question of the server's can have gone out on
		// the response yet; were one sent, the go-sdk's answer would be
		// a second response on it, so the call is answered here instead.
		g.log.Debug("fast path: left to the go-sdk", "endpoint", ep.path, "server", server, "why", "the server is not one the raw path calls")
		return false
	}
	g.fastServed.Add(1)
	out.finish(fastAnswerOf(s, server, tool, req.ID, res, err))
	return true
}

// fastHeaders says why r cannot take the fast path by its headers and
// its session, or "".
func fastHeaders(ep *endpoint, s *session, r *http.Request) string {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" { // what clients send, read without a parse
		if ct, _, _ = mime.ParseMediaType(ct); ct != "application/json" {
			return "content type " + ct
		}
	}
	if jsonOK, streamOK := accepts(r.Header.Values("Accept")); !jsonOK || !streamOK {
		return "the client does not accept what the go-sdk requires"
	}
	p := s.ss.InitializeParams()
	if p == nil {
		return "the session has not initialized"
	}
	v := r.Header.Get("Mcp-Protocol-Version")
	if v != "" && v != p.ProtocolVersion {
		return "protocol version " + v + " is not the session's"
	}
	if p.ProtocolVersion >= multiRoundTripVersion {
		return "protocol version " + p.ProtocolVersion
	}
	return ""
}

// accepts reads an Accept header as the go-sdk does.
func accepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for raw := range strings.SplitSeq(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// fastRoute is the server and tool a client's call of name leads to, as
// the go-sdk path would route it, or why the fast path leaves it.
func (ep *endpoint) fastRoute(ctx context.Context, s *session, name string) (server, tool, why string) {
	if ep.sel == everything && ep.g.opts.StatusTool && name == StatusTool {
		return "", "", "the status tool"
	}
	if ep.g.modeOf(ep, s) != ModeDirect {
		return "", "", "the client is not in direct mode"
	}
	if ep.sel != oneServer && s.budget != ep.g.names.tools.budget {
		// As clientNames translates it for the go-sdk path.
		name = ep.ownName(ctx, name, func(ns *nameSet) map[string]itemKey { return ns.toolKey },
			func(v *view) map[itemKey]string { return v.own.tools }, s.budget)
	}
	ep.settled(ctx)
	r, ok := ep.routes.Load().tools[name]
	switch {
	case !ok:
		return "", "", "not a listed tool"
	case r.headers && (s.sessionless || s.logging.Load()):
		// The go-sdk's handler checks a sessionless call of such a tool
		// against its headers; and the raw path leaves such a tool of a
		// 2026-07-28 HTTP server to the go-sdk only once it has the
		// call, after a log message may have gone out on the response.
		return "", "", "the tool binds arguments to request headers"
	}
	return r.server, r.tool, ""
}

// fastCall makes the call upstream, ended as the go-sdk path's is: when
// the POST ends, the client cancels it, or its session ends. A caller
// that registers the call for the client's cancellation and its
// session's end itself, for the whole of its life (tracked), cancels
// ctx; otherwise fastCall registers it while it runs. The server's
// progress on the call, if the client asked for it, and its log
// messages, if the client set a logging level, are sent to notify, one
// message at a time, all of it before fastCall returns. What the server
// asks meanwhile goes out on out
// (a fast call over HTTP), or as the input requests of trip (a call on
// 2026-07-28: see fastTrip), or on the client's session.
func (g *Gateway) fastCall(ctx context.Context, s *session, out *fastStream, notify messageSender, trip *roundTrip, tracked bool, server, tool string, req fastRequest, meta fastMeta) (json.RawMessage, error) {
	rc, ok := g.src.(rawCaller)
	if !ok {
		return nil, manager.ErrNotRaw
	}
	if meta.TraceParent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": meta.TraceParent, "tracestate": meta.TraceState})
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if !tracked {
		defer s.trackFast(req.ID, func(cause error) bool { cancel(cause); return true }, cancel)()
	}
	// A request on 2026-07-28 says it in its _meta; a holder of
	// sessionless calls has no session.
	caps := meta.caps
	if caps == nil && s.ss != nil {
		if p := s.ss.InitializeParams(); p != nil {
			caps = p.Capabilities
		}
	}
	a := newClientAnswerer(ctx, s, caps, trip)
	a.fast = out
	opts := manager.CallOptions{FailFast: true, Client: s.label, Answerer: a}
	logs := trip == nil && notify != nil && s.logging.Load()
	// The server's log messages go out on the call's response, as the
	// go-sdk path sends them. Nothing may go out on it before the raw path
	// takes the call, for the go-sdk path to take it if not.
	if logs && !rc.RawCalls(server) {
		return nil, manager.ErrNotRaw
	}
	var fw *progressForwarder
	if token := progressToken(req.Params.Meta, meta); token != nil {
		// The manager sends the server a token of its own in its place.
		fw = newProgressForwarder(ctx, false, rawProgress(token, notify))
		opts.Progress = fw.send
	}
	finishLogs := func() {}
	if logs {
		opts.LogLevel = s.callLevel(upstreamCall{})
		finishLogs = g.relayFastLogs(ctx, s, server, notify)
	}
	upMeta := req.Params.Meta
	if meta.stripped {
		upMeta = meta.forward
	}
	res, err := rc.CallRaw(ctx, server, tool, req.Params.Arguments, upMeta, opts)
	if fw != nil {
		fw.finish() // the progress it has goes out before the result
	}
	finishLogs() // and the log messages servers sent before it
	if err != nil && !errors.Is(err, manager.ErrNotRaw) && errors.Is(context.Cause(ctx), ErrShuttingDown) {
		return nil, fmt.Errorf("server %q: tools/call %q: %w: the call did not finish within the shutdown grace and was cancelled upstream. "+
			"It may or may not have done its work; retrying once mcpvisor is back may succeed", server, tool, ErrShuttingDown)
	}
	return res, err
}

// messageSender sends a client a JSON-RPC message: a fast call's
// response (fastStream) or a stdio connection (stdioConn). An interface
// rather than a func, so that a call that sends nothing allocates
// nothing for it.
type messageSender interface {
	send(msg []byte) error
}

// progressToken is the progress token of a call's _meta, raw (meta is
// what fastMessage read of it), or nil if it has none. As the go-sdk
// reads it, only a member named exactly progressToken is one.
func progressToken(raw json.RawMessage, meta fastMeta) json.RawMessage {
	if len(meta.ProgressToken) == 0 || string(meta.ProgressToken) == "null" {
		return nil // what most calls take: no second reading of _meta
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	if token := m["progressToken"]; len(token) > 0 && string(token) != "null" {
		return token
	}
	return nil
}

// fastAnswerOf is the answer to the call with id: its raw result, or an
// error result the model reads, or a JSON-RPC error when the client's
// session ended under the call (no model is left to read it).
func fastAnswerOf(s *session, server, tool string, id, res json.RawMessage, err error) []byte {
	out := make([]byte, 0, len(res)+len(id)+48)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	switch cause := context.Cause(s.ctx); {
	case err == nil:
		out = append(out, `,"result":`...)
		out = append(out, res...)
	case cause != nil && !errors.Is(cause, ErrShuttingDown):
		op := fmt.Sprintf("server %q: tools/call %q", server, tool)
		e, _ := json.Marshal(&jsonrpc.Error{Code: CodeRefused, Message: op + ": " + cause.Error() + "; the call was cancelled upstream"})
		out = append(out, `,"error":`...)
		out = append(out, e...)
	default:
		text := errorText(err)
		if errors.Is(err, ErrShuttingDown) {
			text = err.Error()
		}
		r, _ := json.Marshal(errorResult(text))
		out = append(out, `,"result":`...)
		out = append(out, r...)
	}
	return append(out, "}\n"...)
}

// errReader returns its error: what is left of a body whose reading
// failed, for the go-sdk to answer as it does.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// objectOrNothing reports whether raw JSON is absent, null or an object.
func objectOrNothing(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null" || t[0] == '{'
}

// readBody reads r's body whole, into a buffer of its declared length
// when it declares one (io.ReadAll would grow its buffer from 512 bytes).
func readBody(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n <= 0 || n > maxPresized {
		return io.ReadAll(r.Body)
	}
	buf := make([]byte, 0, n+1) // +1: the EOF is read without growing it
	for {
		if len(buf) == cap(buf) { // longer than declared: the server will say so
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// maxPresized bounds the buffer readBody sizes by a request's
// Content-Length (the body's own limit is the HTTP server's).
const maxPresized = 1 << 20
