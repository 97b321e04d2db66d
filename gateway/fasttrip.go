package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/rawrpc"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A fast call of a client on 2026-07-28. Such a client cannot be sent
// requests: what the server asks during its call goes back as the input
// requests of an input_required result, and the client answers by calling
// again with the request state (see roundTrip). Whether a server will ask
// anything is known only once it does, so the fast path cannot choose
// between itself and the go-sdk path before it sends the call. Instead it
// opens the call's round trip as the go-sdk path does (fastTrip) and
// makes the call upstream on a goroutine of its own, with the round
// trip's answerer:
//
//   - the call ends before the server asks anything (nearly always): its
//     result goes back as the server wrote it, with what the go-sdk adds
//     to a result of that generation (see tripShape), and the round trip
//     is forgotten;
//   - the server asks first: from then on the call is the round trip's, as
//     if the go-sdk path had started it. This request is answered with
//     the input requests and the request state, the result is decoded for
//     the round trip when it comes, and the client's calls with its
//     answers (which carry the request state, so the fast path leaves them)
//     are served by the go-sdk path's round trip code, which finds the
//     call by its state.
//
// Either way the client is answered as on the go-sdk path, and the two
// paths share one round trip machinery.

// perRequest reads raw, the _meta of a request on 2026-07-28, as the
// go-sdk reads it: the client's capabilities (required) and information
// (optional, but well-formed when present), refused as the go-sdk refuses
// them; and the log level it wants, whose messages the go-sdk path
// relays on the call's stream. It keeps the _meta to send upstream: the
// client's without the protocol's own members, which say who the client
// is to the gateway, not to a server on an older protocol. It returns
// why the fast path leaves the request, or "".
func (m *fastMeta) perRequest(raw json.RawMessage) string {
	var all map[string]json.RawMessage
	if json.Unmarshal(raw, &all) != nil {
		return "_meta is not an object"
	}
	if _, ok := all[mcp.MetaKeyProtocolVersion]; !ok {
		return "a member of _meta named in another case"
	}
	said := mcp.Meta{}
	for _, k := range []string{mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities, mcp.MetaKeyLogLevel} {
		if v, ok := all[k]; ok {
			var x any
			_ = json.Unmarshal(v, &x) // valid: the whole _meta decoded
			said[k] = x
		}
	}
	r := &mcp.ServerRequest[*mcp.CallToolParamsRaw]{Params: &mcp.CallToolParamsRaw{Meta: said}}
	if _, ok := said[mcp.MetaKeyClientInfo]; ok {
		if m.client = r.ClientInfo(); m.client == nil {
			return "client information in _meta the go-sdk refuses"
		}
	}
	if m.caps = r.ClientCapabilities(); m.caps == nil {
		return "client capabilities missing from _meta or not what the go-sdk reads"
	}
	if level, _ := said[mcp.MetaKeyLogLevel].(string); level != "" {
		return "the client hears the server's log messages on the call's stream"
	}
	for k := range all {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			delete(all, k)
			m.stripped = true
		}
	}
	if m.stripped && len(all) > 0 {
		m.forward, _ = json.Marshal(all)
	}
	return ""
}

// tripShape is what the go-sdk adds to a result it sends a client on
// 2026-07-28, which the fast path adds too.
type tripShape struct {
	// info is the endpoint's own Implementation (JSON), which a result
	// names in its _meta as its server when the request said in its own
	// _meta that it is on 2026-07-28; nil otherwise.
	info json.RawMessage
	// complete is set when the client's session is on 2026-07-28: a
	// result that needs no input says it is complete (resultType).
	complete bool
}

// fastTrip serves a fast call of a client on 2026-07-28 (see above) and
// returns its answer, or notRaw when the raw path turned the call down
// before sending it (the caller hands it to the go-sdk). ctx ends when
// the client cancels the call. The server's progress, if the call wants
// it, goes to notify (the stdio connection) for as long as the call runs,
// round trip or not. The call has been counted on s (begin); fastTrip's
// upstream goroutine ends that count.
func (g *Gateway) fastTrip(ctx context.Context, s *session, notify messageSender, sh tripShape, server, tool string, req fastRequest, meta fastMeta) (answer []byte, notRaw bool) {
	rt := s.addTrip(ctx, req.Params.Name)
	if rt == nil {
		s.done()
		op := fmt.Sprintf("server %q: tools/call %q", server, tool)
		return sh.answer(req.ID, errorResult(op+": "+errClientGone.Error())), false
	}
	h := &tripHandoff{ready: make(chan struct{})}
	go func() {
		defer s.done()
		res, err := g.fastCall(rt.ctx, s, nil, notify, rt, true, server, tool, req, meta)
		if h.arrive(res, err) {
			rt.finish(tripResult(res, err))
		}
	}()
	for {
		select {
		case <-h.ready: // first: a result that has come wins over questions
		default:
			select {
			case <-h.ready:
			case <-rt.wake:
				reqs := rt.take()
				if reqs == nil {
					continue
				}
				if h.moveOn() {
					// The call is the round trip's: the client's next
					// request, with its answers, goes to the go-sdk path.
					if d := time.Duration(g.holderIdle.Load()); s.isHolder() && d > 0 {
						// Nothing else ends a trip its sessionless client
						// never comes back to.
						rt.idleFor(d, func() { s.expireTrip(rt) })
					}
					return sh.answer(req.ID, inputRequired(reqs, rt.state)), false
				}
				// The result came meanwhile: it is the answer, and what
				// the server asked before it needs none.
			case <-ctx.Done():
				rt.cancel(errAbandoned)
				s.dropTrip(rt)
				return sh.answer(req.ID, errorResult(errAbandoned.Error())), false
			}
		}
		rt.cancel(errFinished)
		s.dropTrip(rt)
		if errors.Is(h.err, manager.ErrNotRaw) {
			return nil, true
		}
		if h.err != nil {
			return sh.answer(req.ID, tripResult(nil, h.err)), false
		}
		return sh.raw(req.ID, h.res), false
	}
}

// tripHandoff decides who has a fast round trip's result: the request
// waiting on it, as the server wrote it, unless that request has answered
// with input requests first (moveOn), when it goes to the round trip.
// The upstream goroutine and the waiting request share it.
type tripHandoff struct {
	ready chan struct{} // closed once res and err are set for the request

	mu sync.Mutex
	// mu guards the following.
	moved   bool // the request answered with input requests
	arrived bool
	res     json.RawMessage
	err     error
}

// arrive hands the call's outcome to the waiting request, or reports that
// it has moved on (the caller finishes the round trip with it).
func (h *tripHandoff) arrive(res json.RawMessage, err error) (moved bool) {
	h.mu.Lock()
	moved = h.moved
	if !moved {
		h.res, h.err, h.arrived = res, err, true
	}
	h.mu.Unlock()
	if !moved {
		close(h.ready)
	}
	return moved
}

// moveOn gives the round trip the call's result, and reports whether it
// did: false when the result has already come to the request.
func (h *tripHandoff) moveOn() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.moved = !h.arrived
	return h.moved
}

// tripResult is the call's outcome as the go-sdk path's round trip
// returns it.
func tripResult(res json.RawMessage, err error) *mcp.CallToolResult {
	if err != nil {
		text := errorText(err)
		if errors.Is(err, ErrShuttingDown) {
			text = err.Error()
		}
		return errorResult(text)
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(res, &out); err != nil {
		return errorResult(fmt.Sprintf("the server's result could not be read: %v", err))
	}
	return &out
}

// answer is the JSON-RPC response with id and res, as the go-sdk sends
// it to the client.
func (sh tripShape) answer(id json.RawMessage, res *mcp.CallToolResult) []byte {
	out := res
	if sh.complete && !res.NeedsInput() {
		// The result type is set only by decoding it.
		out = &mcp.CallToolResult{}
		_ = json.Unmarshal([]byte(`{"resultType":"complete"}`), out)
		out.Content, out.StructuredContent, out.IsError = res.Content, res.StructuredContent, res.IsError
		out.Meta = res.Meta
	}
	if sh.info != nil {
		if _, ok := out.Meta[mcp.MetaKeyServerInfo]; !ok {
			m := mcp.Meta{mcp.MetaKeyServerInfo: sh.info}
			for k, v := range out.Meta {
				m[k] = v
			}
			if out == res {
				c := *res
				out = &c
			}
			out.Meta = m
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(errorResult(fmt.Sprintf("the result could not be sent: %v", err)))
	}
	return sh.line(id, b)
}

// raw is the JSON-RPC response with id and res, the server's result, as
// the go-sdk path sends it: the server's bytes, with what the go-sdk adds
// put in. A result that already has members of those names is rewritten
// whole.
func (sh tripShape) raw(id, res json.RawMessage) []byte {
	if sh.info == nil && !sh.complete {
		return sh.line(id, res)
	}
	plain := true
	members := 0
	if !rawrpc.Members(res, func(key, _ []byte) bool {
		members++
		if bytes.EqualFold(key, []byte("_meta")) || bytes.EqualFold(key, []byte("resultType")) {
			plain = false
		}
		return plain
	}) || !plain {
		return sh.rewritten(id, res)
	}
	body := bytes.TrimSpace(res)
	body = bytes.TrimSpace(body[1 : len(body)-1]) // the members, without braces
	out := make([]byte, 0, len(res)+len(sh.info)+80)
	out = append(out, '{')
	sep := ""
	if sh.info != nil {
		out = append(out, `"_meta":{"`+mcp.MetaKeyServerInfo+`":`...)
		out = append(out, sh.info...)
		out = append(out, '}')
		sep = ","
	}
	if members > 0 {
		out = append(out, sep...)
		out = append(out, body...)
		sep = ","
	}
	if sh.complete {
		out = append(out, sep+`"resultType":"complete"`...)
	}
	return sh.line(id, append(out, '}'))
}

// rewritten is raw for a result whose _meta or resultType the go-sdk would
// change: its members decoded, changed as the go-sdk changes them, and
// encoded again.
func (sh tripShape) rewritten(id, res json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(res, &m) != nil || m == nil {
		return sh.answer(id, tripResult(res, nil))
	}
	if sh.complete {
		m["resultType"] = json.RawMessage(`"complete"`)
	}
	if sh.info != nil {
		var meta map[string]json.RawMessage
		if v, ok := m["_meta"]; ok && string(v) != "null" {
			if json.Unmarshal(v, &meta) != nil || meta == nil {
				return sh.answer(id, tripResult(res, nil))
			}
		}
		if meta == nil {
			meta = map[string]json.RawMessage{}
		}
		if _, ok := meta[mcp.MetaKeyServerInfo]; !ok {
			meta[mcp.MetaKeyServerInfo] = sh.info
		}
		m["_meta"], _ = json.Marshal(meta)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return sh.answer(id, tripResult(res, nil))
	}
	return sh.line(id, b)
}

// line is the JSON-RPC response with id and result, ending in a newline.
func (tripShape) line(id, result []byte) []byte {
	out := make([]byte, 0, len(result)+len(id)+40)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, result...)
	return append(out, "}\n"...)
}
