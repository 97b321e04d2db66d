package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/internal/peer"
)

// sessionlessVersion is the first protocol generation without sessions:
// over streamable HTTP each request stands alone, says in its _meta who
// sends it and what it can do, and carries the MCP-Protocol-Version header
// and no Mcp-Session-Id.
const sessionlessVersion = "2026-07-28"

// sessionlessHeader marks, on a request as the go-sdk hands its headers to
// the handlers, one the gateway routed to its sessionless handler, with
// who sent it (see sender). Whatever a client sends under that name is
// dropped.
const sessionlessHeader = "Mcpvisor-Sessionless"

// speaksSessionless reports whether r is a request of the sessionless
// generation: one with a protocol version header of that generation or
// later and no session. Everything else (an initialize without that
// header, and every request of a session it opened) is the older
// generation's; an initialize with it is sessionless too, and the go-sdk's
// stateless handler answers it for that request alone.
func speaksSessionless(r *http.Request) bool {
	return r.Header.Get("Mcp-Session-Id") == "" && r.Header.Get("Mcp-Protocol-Version") >= sessionlessVersion
}

// generations serves both protocol generations on one endpoint: a request
// of the sessionless generation goes to sessionless, whose go-sdk handler
// makes a session for that request alone, and everything else to
// stateful, today's handler of sessions.
func generations(stateful, sessionless http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(sessionlessHeader)
		if speaksSessionless(r) {
			r.Header.Set(sessionlessHeader, sender(r))
			sessionless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// sender is who sent a sessionless request, as far as the gateway can
// tell people apart: the address it came from and the bearer token it
// showed, if any (hashed: the token itself is kept nowhere). Two people
// whose clients have the same name and version are different senders.
func sender(r *http.Request) string {
	from := peer.Of(r)
	if tok, ok := peer.Bearer(r); ok {
		sum := sha256.Sum256([]byte(tok))
		from += " " + hex.EncodeToString(sum[:8])
	}
	return from
}

// sessionless records the session the go-sdk made for one request of the
// sessionless generation as such, before anything else sees it: it is
// never announced as a client of its own, and its calls outlive it (see
// holder).
func (ep *endpoint) sessionless(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			if extra := req.GetExtra(); extra != nil && extra.Header != nil {
				if from := extra.Header.Get(sessionlessHeader); from != "" {
					ep.g.clients.record(ep, ss, from)
				}
			}
		}
		return next(ctx, method, req)
	}
}

// holderKey names the holder of the sessionless calls of the clients of
// one name and version, from one sender, on one endpoint.
type holderKey struct{ path, name, version, from string }

// holder is the record under which the sessionless clients of s's name and
// version on ep make their calls. The go-sdk's session of a sessionless
// request ends with the request, but a call whose server asks the client
// something spans several requests (the client answers the input requests
// by calling again with the request state), so the call, its request state
// and the client's limits live in a record of their own: one per endpoint,
// client name and version (that is all a sessionless client says of
// itself) and sender, for as long as it has a call or a round trip (see
// dropIfIdle).
// Its label is what the source knows those clients by. It is refused at
// the cap on sessions and while the gateway shuts down. The holder is
// pinned until release is called: the caller counts its call or request
// on it (begin, hold) before releasing it.
func (t *clientTable) holder(ep *endpoint, s *session) (h *session, release func(), err error) {
	key := holderKey{ep.path, s.client.Name, s.client.Version, s.from}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.holders[key]; ok {
		h.mu.Lock()
		h.pins++
		h.mu.Unlock()
		return h, h.unpin, nil
	}
	if t.draining {
		return nil, nil, ErrShuttingDown
	}
	if max := t.g.opts.MaxSessions; len(t.holders) >= max {
		return nil, nil, &LimitError{Limit: SessionLimit, Max: max}
	}
	c := s.client
	c.ID = publicID("sessionless\x00" + key.path + "\x00" + key.name + "\x00" + key.version + "\x00" + key.from)
	h = &session{table: t, client: c, label: c.Label(), budget: s.budget, sessionless: true, key: key, pins: 1,
		idle: make(chan struct{}), trips: map[string]*roundTrip{}, subs: map[subKey]bool{}, maxCalls: t.g.opts.MaxClientCalls}
	h.start()
	t.holders[key] = h
	return h, h.unpin, nil
}

// unpin lets go of a holder pinned by clientTable.holder.
func (s *session) unpin() {
	s.mu.Lock()
	s.pins--
	s.mu.Unlock()
	s.table.dropIfIdle(s)
}

// isHolder reports whether s is the holder of sessionless calls.
func (s *session) isHolder() bool { return s.sessionless && s.ss == nil }

// errHolderIdle ends a holder that has nothing left in flight.
var errHolderIdle = errors.New("the sessionless client has no call in flight")

// dropIfIdle forgets holder h, and lets the source forget its client,
// once it has no call, no request and no round trip in flight: the next
// request of its clients makes a new one, so the cap on sessions counts
// the sessionless clients that are calling, not every name ever seen.
// The holders of a gateway shutting down stay for Shutdown to end.
func (t *clientTable) dropIfIdle(h *session) {
	if !h.isHolder() {
		return
	}
	t.mu.Lock()
	if t.draining || t.holders[h.key] != h {
		t.mu.Unlock()
		return
	}
	h.mu.Lock()
	idle := h.calls == 0 && h.pins == 0 && len(h.trips) == 0
	if idle {
		h.ended = true
		h.closeIfIdleLocked()
	}
	h.mu.Unlock()
	if idle {
		delete(t.holders, h.key)
	}
	t.mu.Unlock()
	if idle {
		h.cancel(errHolderIdle)
		t.g.src.ReleaseClient(h.label)
	}
}

// expireTrip gives up a round trip of holder s whose client has not come
// back for it within the session timeout, cancelling its call upstream.
func (s *session) expireTrip(rt *roundTrip) {
	s.mu.Lock()
	if s.trips[rt.state] == rt {
		delete(s.trips, rt.state)
	}
	s.mu.Unlock()
	rt.cancel(errExpired)
	s.table.dropIfIdle(s)
}

// cacheable decides the cache fields of what the endpoint answers with
// them (server/discover, the lists, resources/read). A tools list is the
// client's own ("private") where what a client is shown depends on more
// than the address: on a toolset's endpoint, and wherever name budgets or
// a mode chooser can make one client's list another's. A list's time to
// live is the smallest its servers gave theirs (listTTLs). The SDK calls
// it under its lock: it reads atomics only.
func (ep *endpoint) cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	ttl := ep.ttls.Load()
	switch req.(type) {
	case *mcp.ListToolsRequest:
		if ep.toolsPerClient() {
			c.CacheScope = "private"
		}
		c.TTLMs = ttl.tools
	case *mcp.ListPromptsRequest:
		c.TTLMs = ttl.prompts
	case *mcp.ListResourcesRequest:
		c.TTLMs = ttl.resources
	case *mcp.ListResourceTemplatesRequest:
		c.TTLMs = ttl.templates
	}
}

// listTTLs is the time to live, in milliseconds, of an endpoint's lists;
// 0 is no hint (stale at once).
type listTTLs struct{ tools, prompts, resources, templates int }

// listTTLs gives each of the endpoint's lists of v the smallest time to
// live the servers behind that list gave theirs, ignoring the servers that
// gave none: on a server's endpoint that server's, on a toolset's the
// servers whose tools it lists, on /mcp every server whose items are
// offered. A server's hint covers its own list only; when a server comes,
// goes or changes its list, the endpoint's clients hear list_changed.
func (ep *endpoint) listTTLs(v *view) *listTTLs {
	var servers []string
	switch ep.sel {
	case oneServer:
		servers = []string{ep.name}
	case oneToolset:
		for _, r := range ep.tools {
			servers = append(servers, r.server)
		}
	default:
		servers = v.servers
	}
	out := &listTTLs{}
	for _, s := range servers {
		ttl, ok := v.ttl[s]
		if !ok {
			continue
		}
		smallest(&out.tools, ttl.Tools)
		if ep.sel != oneToolset {
			smallest(&out.prompts, ttl.Prompts)
			smallest(&out.resources, ttl.Resources)
			smallest(&out.templates, ttl.Templates)
		}
	}
	return out
}

// smallest lowers *ms to d when d is a hint (over 0) smaller than *ms, or
// *ms has none yet.
func smallest(ms *int, d time.Duration) {
	if n := int(d.Milliseconds()); n > 0 && (*ms == 0 || n < *ms) {
		*ms = n
	}
}

// toolsPerClient reports whether two clients of the endpoint may be shown
// different tools.
func (ep *endpoint) toolsPerClient() bool {
	return ep.sel == oneToolset || ep.g.budgets.Load() != nil || ep.g.modeFor.Load() != nil
}
