package manager

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager/ask"
)

// A streamable HTTP server sends what it asks during a call on the
// response stream of that call's POST, which ties the request to the
// call, and so to its client; but the go-sdk merges every stream into one
// and hands the request on without saying which it came on. callStreams
// keeps that fact: the HTTP transport of a call's POST marks each request
// on its response stream with a tag in the request's _meta (streamTagKey),
// and the handler finds the call's answerer by the tag (and removes it, so
// that nobody else sees it). Tags are random: a server cannot name another
// call's stream, and one seen on the standalone stream, or on stdio,
// names nothing.

// streamTagKey is the _meta key of the tag.
const streamTagKey = "io.mcpvisor/stream"

// maxTaggedLine bounds the SSE line looked at for a request (and the
// buffer each stream has): a longer one (a large result) passes through as
// it is, and a request that long is not tagged, so it is asked as if it
// had come outside the call.
const maxTaggedLine = 32 << 10

// callStreams maps the tags of the response streams open to the answerer
// of the call each belongs to.
type callStreams struct {
	mu sync.Mutex
	// mu guards open.
	open map[string]*ask.Candidate
}

func (cs *callStreams) add(c *ask.Candidate) string {
	tag := rand.Text()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.open == nil {
		cs.open = map[string]*ask.Candidate{}
	}
	cs.open[tag] = c
	return tag
}

func (cs *callStreams) remove(tag string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	delete(cs.open, tag)
}

// carried removes the tag from a request's _meta and returns ctx carrying
// the answerer of the call whose stream it came on, if any: it is then
// asked first, as a 2026-07-28 call's input requests are.
func (cs *callStreams) carried(ctx context.Context, meta mcp.Meta) context.Context {
	v, ok := meta[streamTagKey]
	if !ok {
		return ctx
	}
	delete(meta, streamTagKey)
	tag, _ := v.(string)
	cs.mu.Lock()
	c := cs.open[tag]
	cs.mu.Unlock()
	if c == nil {
		return ctx
	}
	return context.WithValue(ctx, askingKey{}, c)
}

// transport wraps base so that the response streams of calls' POSTs tag
// the requests on them.
func (cs *callStreams) transport(base http.RoundTripper) http.RoundTripper {
	return streamTagger{base: base, cs: cs}
}

type streamTagger struct {
	base http.RoundTripper
	cs   *callStreams
}

func (t streamTagger) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	c, _ := req.Context().Value(askingKey{}).(*ask.Candidate)
	if err != nil || c == nil || req.Method != http.MethodPost || resp.Body == nil {
		return resp, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return resp, nil
	}
	tag := t.cs.add(c)
	resp.Body = newTaggedStream(resp.Body, tag, func() { t.cs.remove(tag) })
	return resp, nil
}

// taggedStream passes an SSE body through, adding its tag to the _meta of
// every request that asks the client (a data line holding one).
type taggedStream struct {
	body   io.ReadCloser
	r      *bufio.Reader
	tag    string
	out    []byte // what is ready to be read
	err    error  // to return once out is read
	long   bool   // in a line longer than the buffer: passed through
	forget func()
	once   sync.Once
}

func newTaggedStream(body io.ReadCloser, tag string, forget func()) *taggedStream {
	return &taggedStream{body: body, r: bufio.NewReaderSize(body, maxTaggedLine), tag: tag, forget: forget}
}

func (s *taggedStream) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// fill reads the next line, or the next piece of a long one. out may
// point into the reader's buffer: it is drained before the next read.
func (s *taggedStream) fill() {
	line, err := s.r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		s.out, s.long = line, true
		return
	case s.long:
		s.out, s.long = line, false
	default:
		s.out = tagLine(line, s.tag)
	}
	s.err = err
}

func (s *taggedStream) Close() error {
	s.once.Do(s.forget)
	return s.body.Close()
}

// askingMethods are the requests a server sends to ask its client.
var askingMethods = map[string]bool{"elicitation/create": true, "sampling/createMessage": true, "roots/list": true}

// mentionsAskingMethod is a quick look for the name of an asking method,
// so that only lines that may be such a request are decoded.
func mentionsAskingMethod(payload []byte) bool {
	for _, m := range askingNames {
		if bytes.Contains(payload, m) {
			return true
		}
	}
	return false
}

var askingNames = [][]byte{[]byte("elicitation/create"), []byte("sampling/createMessage"), []byte("roots/list")}

// tagLine returns an SSE line, with its line ending, with tag added to
// the _meta of the request it carries when it is a data line holding a
// request that asks the client; any other line is returned as it is.
func tagLine(line []byte, tag string) []byte {
	body := bytes.TrimRight(line, "\r\n")
	payload, ok := bytes.CutPrefix(body, []byte("data:"))
	if !ok || !mentionsAskingMethod(payload) {
		return line // most lines: results, notifications, ids, blank lines
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(payload, &msg) != nil {
		return line
	}
	var method string
	if _, isCall := msg["id"]; !isCall || json.Unmarshal(msg["method"], &method) != nil || !askingMethods[method] {
		return line
	}
	params := map[string]json.RawMessage{}
	if p, ok := msg["params"]; ok && string(p) != "null" && json.Unmarshal(p, &params) != nil {
		return line
	}
	meta := map[string]json.RawMessage{}
	if m, ok := params["_meta"]; ok && string(m) != "null" && json.Unmarshal(m, &meta) != nil {
		return line
	}
	meta[streamTagKey], _ = json.Marshal(tag)
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return line
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return append(append([]byte("data: "), out...), line[len(body):]...)
}
