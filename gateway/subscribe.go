package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
)

// A client's resource subscription is passed on to the server that lists
// the resource, which the manager keeps subscribed across its reconnects;
// the server's notifications/resources/updated come back as notices, which
// the deliver goroutine hands to the go-sdk server, which sends them to the
// sessions subscribed to that URI.
// Each session's subscriptions are dropped upstream when it ends.

// subKey is one subscription of a client session.
type subKey struct{ server, uri string }

// subscribe handles resources/subscribe (and, on 2026-07-28, the
// resources of a subscriptions/listen).
func (ep *endpoint) subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	s := ep.g.clients.session(ep, req.Session)
	// Counted as a call, so that the session's end waits for it and then
	// drops what it took.
	if err := s.begin(); err != nil {
		return err
	}
	defer s.done()
	server, err := ep.resourceServer(req.Params.URI)
	if err != nil {
		return err
	}
	k := subKey{server, req.Params.URI}
	s.mu.Lock()
	if s.subs[k] {
		s.mu.Unlock()
		return nil
	}
	s.subs[k] = true
	s.mu.Unlock()
	if err := ep.g.src.Subscribe(k.server, k.uri); err != nil {
		s.mu.Lock()
		delete(s.subs, k)
		s.mu.Unlock()
		return rpcError(err)
	}
	return nil
}

// unsubscribe handles resources/unsubscribe.
func (ep *endpoint) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	s := ep.g.clients.session(ep, req.Session)
	var held []subKey // by URI: the listing may have changed since
	s.mu.Lock()
	for k := range s.subs {
		if k.uri == req.Params.URI {
			held = append(held, k)
			delete(s.subs, k)
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, k := range held {
		errs = append(errs, ep.g.src.Unsubscribe(k.server, k.uri))
	}
	return errors.Join(errs...)
}

// resourceServer is the server whose resource uri is on this endpoint: the
// one listing it (the first by name, as the listing does), else the one
// whose resource template it matches.
func (ep *endpoint) resourceServer(uri string) (string, error) {
	if ep.sel == oneServer {
		return ep.name, nil
	}
	v := ep.g.view.Load()
	for _, r := range v.resources {
		if r.URI == uri && !r.Template {
			return r.Server, nil
		}
	}
	for _, r := range v.resources {
		if !r.Template {
			continue
		}
		if t, err := uritemplate.New(r.URI); err == nil && t.Regexp().MatchString(uri) {
			return r.Server, nil
		}
	}
	return "", fmt.Errorf("resources/subscribe %q: no server lists this resource or a template it matches", uri)
}

// subscribedAt lists the URIs some client session holds a subscription to
// at server.
func (t *clientTable) subscribedAt(server string) []string {
	t.mu.Lock()
	sessions := slices.Collect(maps.Values(t.bySession))
	t.mu.Unlock()
	seen := map[string]bool{}
	for _, s := range sessions {
		s.mu.Lock()
		for k := range s.subs {
			if k.server == server {
				seen[k.uri] = true
			}
		}
		s.mu.Unlock()
	}
	return slices.Sorted(maps.Keys(seen))
}

// dropSubscriptions gives back what an ended session held.
func (t *clientTable) dropSubscriptions(s *session) {
	s.mu.Lock()
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for k := range subs {
		_ = t.g.src.Unsubscribe(k.server, k.uri)
	}
}
