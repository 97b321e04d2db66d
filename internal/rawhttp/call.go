package rawhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
)

// Session is the go-sdk client session a raw request is sent on.
type Session struct {
	// Client sends the requests: the one the go-sdk's transport sends
	// through.
	Client *http.Client
	// URL is the endpoint the go-sdk posts to.
	URL string
	// ID is the session's Mcp-Session-Id, "" for a server without
	// sessions.
	ID string
	// Protocol is the protocol version the session negotiated, sent as
	// MCP-Protocol-Version.
	Protocol string
	// MaxEvent bounds the data of one event on a response stream; no
	// bound if zero or less.
	MaxEvent int
	// Name is what a request of a protocol of 2026-07-28 or later names
	// in its Mcp-Name header, as the go-sdk's client sends it: the tool a
	// tools/call calls. None if "".
	Name string
	// MaxRetries bounds the resumption of a cut response stream as the
	// go-sdk transport's field of that name does: zero means 5, a
	// negative number none.
	MaxRetries int
}

// Peer takes what the server sends on a call's stream besides the answer.
type Peer interface {
	// Notify is given each notification, in order, on the caller's
	// goroutine, before Call returns.
	Notify(method string, params json.RawMessage)
	// Ask answers a request of the server's. It runs on a goroutine of its
	// own; ctx ends when the call does. An error that is a
	// *jsonrpc.Error is sent as it is, any other as an internal error.
	Ask(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
}

// ErrSessionMissing is mcp.ErrSessionMissing: the server answered 404 to
// a request of the session (it no longer knows the session).
var ErrSessionMissing = mcp.ErrSessionMissing

// ErrNoAnswer is in the chain of the error of a call whose response stream
// ended before the answer came, with no event id to resume it from; the
// call may or may not have run. It is worded as the go-sdk words it.
var ErrNoAnswer = errors.New("request terminated without response")

// ErrBroken is in the chain of the error of a call after which the
// go-sdk's transport gives its session up (its connection fails, and the
// session ends): the caller ends the session as the go-sdk would have.
// Those are an error status other than the transient ones (see
// [ErrRejected]) without a JSON-RPC error in its body, an answer that is
// neither JSON nor an event stream, a body or event that is not JSON-RPC,
// an event over the bound, and a cut stream that cannot be resumed.
var ErrBroken = errors.New("the HTTP session is given up")

// ErrRejected is what the go-sdk's transport calls a failure that leaves
// the session as it was (its jsonrpc2.ErrRejected, internal to it): a
// transient status (429, 500, 502, 503, 504) or an error status whose
// body is a JSON-RPC error. Its code is in the chain of such an error.
var ErrRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

// StatusError is a response status that is neither an answer nor one the
// session's client turns into an error of its own (401 and 403 are).
type StatusError struct {
	Code int
}

// transient reports whether a response status is one the go-sdk's
// transport takes for a passing failure of the server's.
func transient(code int) bool {
	switch code {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable,
		http.StatusGatewayTimeout, http.StatusTooManyRequests:
		return true
	}
	return false
}

// broken is err with ErrBroken in its chain, worded as err.
func broken(err error) error {
	return brokenError{err}
}

type brokenError struct{ err error }

func (e brokenError) Error() string   { return e.err.Error() }
func (e brokenError) Unwrap() []error { return []error{e.err, ErrBroken} }

// Error is the status's text, as the go-sdk's transport words it.
func (e *StatusError) Error() string {
	if t := http.StatusText(e.Code); t != "" {
		return t
	}
	return fmt.Sprintf("HTTP status %d", e.Code)
}

// cancelTime bounds the POST of notifications/cancelled.
const cancelTime = 5 * time.Second

// seq numbers the requests of this process.
var seq atomic.Uint64

// Call sends a request of method with params (a JSON object, or nil) and
// returns the result the server answered with, raw. A JSON-RPC error
// answer is returned as a *rawrpc.Error. If ctx ends first, the server is
// told the request is cancelled, with reason, and ctx's cause is returned.
func (s Session) Call(ctx context.Context, method string, params json.RawMessage, reason string, p Peer) (json.RawMessage, error) {
	id := `"` + rawrpc.IDPrefix + "h" + strconv.FormatUint(seq.Add(1), 36) + `"`
	body := make([]byte, 0, 64+len(method)+len(params))
	body = append(body, `{"jsonrpc":"2.0","id":`...)
	body = append(body, id...)
	body = append(body, `,"method":`...)
	body = strconv.AppendQuote(body, method)
	if len(params) > 0 {
		body = append(body, `,"params":`...)
		body = append(body, params...)
	}
	body = append(body, '}')

	askCtx, stopAsks := context.WithCancel(ctx)
	var asks sync.WaitGroup
	defer asks.Wait()
	defer stopAsks()

	res, err := s.call(ctx, askCtx, &asks, method, id, body, p)
	if err != nil && ctx.Err() != nil {
		s.cancelled(ctx, id, reason)
		return nil, context.Cause(ctx)
	}
	return res, err
}

func (s Session) call(ctx, askCtx context.Context, asks *sync.WaitGroup, method, id string, body []byte, p Peer) (json.RawMessage, error) {
	summary := fmt.Sprintf("sending %q", method)
	resp, err := s.post(ctx, method, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", summary, err)
	}
	defer drain(resp)
	if err := s.check(summary, resp); err != nil {
		return nil, err
	}
	switch mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt {
	case "application/json":
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, broken(fmt.Errorf("%s: reading the answer: %w", summary, err))
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, broken(fmt.Errorf("%s: the answer is not JSON-RPC: %w", summary, err))
		}
		if m.Method != "" || string(bytes.TrimSpace(m.ID)) != id {
			return nil, fmt.Errorf("%s: the answer is not the response to the request", summary)
		}
		return m.answer()
	case "text/event-stream":
		return s.stream(ctx, askCtx, asks, summary, id, resp.Body, p)
	default:
		return nil, broken(fmt.Errorf("%s: unsupported content type %q", summary, mt))
	}
}

// message is what Call reads of a message from the server.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rawrpc.Error   `json:"error"`
}

func (m *message) answer() (json.RawMessage, error) {
	if m.Error != nil {
		return nil, m.Error
	}
	if len(m.Result) == 0 {
		return nil, errors.New("the response has neither a result nor an error")
	}
	return m.Result, nil
}

// answer answers the server's request m and posts the answer.
func (s Session) answer(ctx context.Context, m message, p Peer) {
	res, err := p.Ask(ctx, m.Method, m.Params)
	out := make([]byte, 0, 64+len(res))
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, m.ID...)
	if err == nil {
		out = append(out, `,"result":`...)
		out = append(out, res...)
	} else {
		var rpcErr *jsonrpc.Error
		if !errors.As(err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
		}
		e, _ := json.Marshal(rpcErr)
		out = append(out, `,"error":`...)
		out = append(out, e...)
	}
	out = append(out, '}')
	if ctx.Err() != nil {
		return // the call is over: nobody waits for the answer
	}
	s.notify(ctx, "", out)
}

// cancelled tells the server that the request with id is cancelled.
func (s Session) cancelled(ctx context.Context, id, reason string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTime)
	defer cancel()
	b := make([]byte, 0, 96+len(id)+len(reason))
	b = append(b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`...)
	b = append(b, id...)
	b = append(b, `,"reason":`...)
	b = strconv.AppendQuote(b, reason)
	b = append(b, "}}"...)
	s.notify(ctx, "notifications/cancelled", b)
}

// notify posts a message that is not a request: a notification of
// method, or an answer (method ""); the server's answer says nothing
// more than whether it took it.
func (s Session) notify(ctx context.Context, method string, body []byte) {
	resp, err := s.post(ctx, method, body)
	if err != nil {
		return
	}
	drain(resp)
}

// sessionlessVersion is the first protocol generation whose requests name
// their method in an Mcp-Method header.
const sessionlessVersion = "2026-07-28"

// post POSTs body, a request or notification of method ("" for an
// answer), with the headers the go-sdk's client sends.
func (s Session) post(ctx context.Context, method string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	s.headers(req, method)
	return s.Client.Do(req)
}

// headers sets the session's headers on req, a request or notification
// of method ("" for an answer or a GET).
func (s Session) headers(req *http.Request, method string) {
	if s.Protocol != "" {
		req.Header.Set("Mcp-Protocol-Version", s.Protocol)
	}
	if s.ID != "" {
		req.Header.Set("Mcp-Session-Id", s.ID)
	}
	if method != "" && s.Protocol >= sessionlessVersion {
		req.Header.Set("Mcp-Method", method)
		if method == "tools/call" && s.Name != "" {
			req.Header.Set("Mcp-Name", s.Name)
		}
	}
}

// check turns a response status that is no answer into the error the
// go-sdk's transport makes of it, for the request summary says: a
// transient status, ErrRejected; a JSON-RPC error in the body, that
// *rawrpc.Error; a 404 of a session, ErrSessionMissing; any other,
// ErrBroken.
func (s Session) check(summary string, resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	status := &StatusError{Code: resp.StatusCode}
	if transient(resp.StatusCode) {
		return fmt.Errorf("%w: %s: %w", ErrRejected, summary, status)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var m message
	if json.Unmarshal(b, &m) == nil && m.Error != nil {
		return fmt.Errorf("%s: %w (HTTP %d)", summary, m.Error, resp.StatusCode)
	}
	if resp.StatusCode == http.StatusNotFound && s.ID != "" {
		return fmt.Errorf("%s: session %s: %w", summary, s.ID, ErrSessionMissing)
	}
	return broken(fmt.Errorf("%s: %w", summary, status))
}
