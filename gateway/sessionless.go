package gateway

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionlessVersion is the first protocol generation without sessions:
// over streamable HTTP each request stands alone, says in its _meta who
// sends it and what it can do, and carries the MCP-Protocol-Version header
// and no Mcp-Session-Id.
const sessionlessVersion = "2026-07-28"

// sessionlessHeader marks, on a request as the go-sdk hands its headers to
// the handlers, one the gateway routed to its sessionless handler.
// Whatever a client sends under that name is dropped.
const sessionlessHeader = "Mcpvisor-Sessionless"

// speaksSessionless reports whether r is a request of the sessionless
// generation: one with a protocol version header of that generation or
// later and no session. Everything else (initialize, and every request of
// a session it opened) is the older generation's.
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
			r.Header.Set(sessionlessHeader, "1")
			sessionless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// sessionless records the session the go-sdk made for one request of the
// sessionless generation as such, before anything else sees it: it is
// never announced as a client of its own, and its calls outlive it (see
// holder).
func (ep *endpoint) sessionless(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
			if extra := req.GetExtra(); extra != nil && extra.Header != nil && extra.Header.Get(sessionlessHeader) != "" {
				ep.g.clients.record(ep, ss, true)
			}
		}
		return next(ctx, method, req)
	}
}

// holderKey names the holder of the sessionless calls of the clients of
// one name and version on one endpoint.
type holderKey struct{ path, name, version string }

// holder is the record under which the sessionless clients of s's name and
// version on ep make their calls. The go-sdk's session of a sessionless
// request ends with the request, but a call whose server asks the client
// something spans several requests (the client answers the input requests
// by calling again with the request state), so the call, its request state
// and the client's limits live in a record of their own: one per endpoint,
// client name and version (that is all a sessionless client says of
// itself), until the gateway shuts down. Its label is what the source
// knows those clients by. It is refused at the cap on sessions and while
// the gateway shuts down.
func (t *clientTable) holder(ep *endpoint, s *session) (*session, error) {
	key := holderKey{ep.path, s.client.Name, s.client.Version}
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.holders[key]; ok {
		return h, nil
	}
	if t.draining {
		return nil, ErrShuttingDown
	}
	if max := t.g.opts.MaxSessions; len(t.holders) >= max {
		return nil, &LimitError{Limit: SessionLimit, Max: max}
	}
	c := s.client
	c.ID = publicID("sessionless\x00" + key.path + "\x00" + key.name + "\x00" + key.version)
	h := &session{table: t, client: c, label: c.Label(), budget: s.budget, sessionless: true,
		idle: make(chan struct{}), trips: map[string]*roundTrip{}, subs: map[subKey]bool{}, maxCalls: t.g.opts.MaxClientCalls}
	h.ctx, h.cancel = context.WithCancelCause(context.Background())
	t.holders[key] = h
	return h, nil
}

// cacheable decides the cache fields of what the endpoint answers with
// them (server/discover, the lists, resources/read). A tools list is the
// client's own ("private") where what a client is shown depends on more
// than the address: on a toolset's endpoint, and wherever name budgets or
// a mode chooser can make one client's list another's. The time to live
// stays 0 (stale at once): the lists follow the servers, which connect,
// reconnect and change theirs at any time, and the upstream's own hints
// are not kept. The SDK calls it under its lock: it reads atomics only.
func (ep *endpoint) cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if _, ok := req.(*mcp.ListToolsRequest); ok && ep.toolsPerClient() {
		c.CacheScope = "private"
	}
}

// toolsPerClient reports whether two clients of the endpoint may be shown
// different tools.
func (ep *endpoint) toolsPerClient() bool {
	return ep.sel == oneToolset || ep.g.budgets.Load() != nil || ep.g.modeFor.Load() != nil
}
