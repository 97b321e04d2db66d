package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// What a server asks during a fast call goes to the client on the call's
// own response, as the go-sdk path sends it: the response turns into an
// event stream at the first question, the question goes out on it as a
// request under an id of the gateway's (a string the go-sdk's own
// requests, which it numbers, never use), and the client's answer, a POST
// of a JSON-RPC response, is taken by the fast path before the go-sdk
// sees it (it knows no such request). The call's result is then the
// stream's last event. A client need not hold a standalone stream open
// for this: the question travels on the call's.

// fastStream is the HTTP response of one fast call.
type fastStream struct {
	w         http.ResponseWriter
	sessionID string

	mu sync.Mutex
	// mu guards the following, and serialises writes to w (whole events).
	sse    bool // the response went out as text/event-stream
	closed bool // the call's answer went out: nothing more may be written
}

// errStreamClosed is why a question cannot go out on a fast call's
// response: the call has been answered.
var errStreamClosed = errors.New("the call's response has ended")

// send writes msg, a JSON-RPC message, as an event on the response,
// turning the response into an event stream first if it is not one yet.
func (f *fastStream) send(msg []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errStreamClosed
	}
	if !f.sse {
		h := f.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Mcp-Session-Id", f.sessionID)
		f.w.WriteHeader(http.StatusOK)
		f.sse = true
	}
	if err := writeEvent(f.w, msg); err != nil {
		f.closed = true
		return err
	}
	return nil
}

// started reports whether anything was written on the response.
func (f *fastStream) started() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sse || f.closed
}

// finish writes the call's answer, msg: the whole response if nothing was
// sent before it, else the stream's last event.
func (f *fastStream) finish(msg []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.closed = true
	if f.sse {
		_ = writeEvent(f.w, msg)
		return
	}
	h := f.w.Header()
	h["Content-Type"] = jsonContentType
	h.Set("Mcp-Session-Id", f.sessionID)
	_, _ = f.w.Write(msg)
}

// jsonContentType is the Content-Type of every answer sent as JSON, one
// slice for all (net/http copies a response's headers before writing them).
// It is shared by every response's header map: it must never be edited in
// place (no Header().Add of a Content-Type on a fast response, no append).
var jsonContentType = []string{"application/json"}

// writeEvent writes msg, one line of JSON, as a server-sent event and
// flushes it to the client.
func writeEvent(w http.ResponseWriter, msg []byte) error {
	out := make([]byte, 0, len(msg)+24)
	out = append(out, "event: message\ndata: "...)
	out = append(out, msg...)
	if out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	out = append(out, '\n')
	if _, err := w.Write(out); err != nil {
		return err
	}
	return http.NewResponseController(w).Flush()
}

// fastAnswer is a client's answer to a question sent on a fast call.
type fastAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *fastError      `json:"error"`
}

// fastError is a JSON-RPC error as a client sends it.
type fastError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// askFast sends the client a request of method with params on the fast
// call's response f, and waits for its answer, which it decodes into
// result. It ends when ctx does, telling the client so, as the go-sdk
// does, and why (ctx's cause). Errors are worded as the go-sdk words
// them; a request that could not be written is ErrNoAnswer, so that the
// host may answer.
func (s *session) askFast(ctx context.Context, f *fastStream, method string, params any, result any) error {
	s.mu.Lock()
	s.askedSeen++
	id := fmt.Sprintf(`"mcpvisor-q-%d"`, s.askedSeen)
	if s.asked == nil {
		s.asked = map[string]chan fastAnswer{}
	}
	answer := make(chan fastAnswer, 1)
	s.asked[id] = answer
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.asked, id)
		s.mu.Unlock()
	}()
	p, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("calling %q: %w", method, err)
	}
	msg := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, p)
	if err := f.send(msg); err != nil {
		return fmt.Errorf("client %s could not be sent %s: %w: %w", s.label, method, err, ask.ErrNoAnswer)
	}
	select {
	case a := <-answer:
		if a.Error != nil {
			return fmt.Errorf("calling %q: %w", method, &jsonrpc.Error{Code: a.Error.Code, Message: a.Error.Message, Data: a.Error.Data})
		}
		if err := json.Unmarshal(a.Result, result); err != nil {
			return fmt.Errorf("calling %q: the client's result: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		// The client and the server hear why (the call was cancelled,
		// the session ended, …), not only that it ended.
		why := context.Cause(ctx)
		note, _ := json.Marshal(&mcp.CancelledParams{RequestID: json.RawMessage(id), Reason: why.Error()})
		_ = f.send(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":%s}`, note))
		if errors.Is(why, ctx.Err()) {
			return fmt.Errorf("client %s: %s: %w", s.label, method, why)
		}
		return fmt.Errorf("client %s: %s: %w: %w", s.label, method, ctx.Err(), why)
	}
}

// answerFast hands a client's answer, body, to the question of a fast
// call it answers (by id), and reports whether there was one.
func (s *session) answerFast(id json.RawMessage, body []byte) bool {
	key := fastKey(id)
	s.mu.Lock()
	answer := s.asked[key]
	delete(s.asked, key)
	s.mu.Unlock()
	if answer == nil {
		return false
	}
	var a fastAnswer
	if err := json.Unmarshal(body, &a); err != nil || (a.Error == nil && len(a.Result) == 0) {
		a = fastAnswer{Error: &fastError{Code: jsonrpc.CodeInvalidRequest, Message: "the client's answer is neither a result nor an error"}}
	}
	answer <- a // buffered, and only ever sent once
	return true
}

// asking reports whether the client has questions of fast calls to
// answer.
func (s *session) asking() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.asked) > 0
}
