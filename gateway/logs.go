package gateway

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager/notify"
)

// logSendTimeout bounds delivering one log message to one client.
const logSendTimeout = 2 * time.Second

// deliver is the gateway's one goroutine for what servers say: it takes
// the notices of its listener in order and sends log messages and
// resource updates to the clients of the endpoints serving their server.
// Its listener is lossless for resource updates (the manager waits for it
// while it keeps up); what it missed it makes up for (see makeUp). It runs
// until the gateway closes, which waits for it.
//
// A call that asks (flush) is answered once deliver has sent everything
// its listener held when the call asked.
func (g *Gateway) deliver() {
	defer close(g.notesDone)
	defer g.notes.Close()
	for {
		select {
		case f := <-g.flushes:
			if !g.flushed(f) {
				return
			}
			continue
		case <-g.ctx.Done():
			return
		default:
		}
		n, ok, err := g.notes.TryNext()
		if err != nil {
			return // the gateway or the manager closed
		}
		if ok {
			g.send(n)
			continue
		}
		select {
		case <-g.notes.Ready():
		case f := <-g.flushes:
			if !g.flushed(f) {
				return
			}
		case <-g.ctx.Done():
			return
		}
	}
}

// flushed answers a flush: it sends what was queued when the call asked
// (not until the queue is empty: under a flood it may never be), then
// closes f. It is false once the listener is closed.
func (g *Gateway) flushed(f chan struct{}) bool {
	for range g.notes.Queued() {
		n, ok, err := g.notes.TryNext()
		if err != nil {
			return false
		}
		if !ok {
			break
		}
		g.send(n)
	}
	close(f)
	return true
}

// send sends one notice to the clients it is for.
func (g *Gateway) send(n notify.Notice) {
	switch n := n.(type) {
	case notify.LogMessage:
		g.sendLog(n)
	case notify.ResourceUpdated:
		g.sendUpdate(n.Server, n.URI, n.Meta)
	case notify.Lost:
		g.makeUp(n)
	}
}

// flush waits until deliver has sent what servers said before now, or
// ctx ends.
func (g *Gateway) flush(ctx context.Context) {
	f := make(chan struct{})
	select {
	case g.flushes <- f:
	case <-ctx.Done():
		return
	case <-g.notesDone:
		return
	}
	select {
	case <-f:
	case <-ctx.Done():
	case <-g.notesDone:
	}
}

// serving lists the endpoints that serve server's resources: /mcp and
// the server's own (a toolset serves tools only).
func (g *Gateway) serving(server string) []*endpoint {
	var out []*endpoint
	for _, ep := range *g.served.Load() {
		if ep.sel == everything || ep.sel == oneServer && ep.name == server {
			out = append(out, ep)
		}
	}
	return out
}

// hearing lists the endpoints whose clients hear server's log messages:
// those serving it, and the toolsets that hold any of its tools.
func (g *Gateway) hearing(server string) []*endpoint {
	var out []*endpoint
	for _, ep := range *g.served.Load() {
		switch {
		case ep.sel == everything || ep.sel == oneServer && ep.name == server:
			out = append(out, ep)
		case ep.sel == oneToolset:
			if rt := ep.routes.Load(); rt != nil && rt.holds(server) {
				out = append(out, ep)
			}
		}
	}
	return out
}

// holds reports whether any of the table's tools is server's.
func (rt *routeTable) holds(server string) bool {
	for _, r := range rt.tools {
		if r.server == server {
			return true
		}
	}
	return false
}

// sendLog sends a server's log message to the clients of every endpoint
// that serves that server or holds one of its tools in a toolset, each at
// or above the level it set with logging/setLevel (none before it sets
// one). A message from a client's
// own session of a per-client server goes to that client only.
func (g *Gateway) sendLog(n notify.LogMessage) {
	if n.Level == "" {
		return
	}
	logger := n.Server
	if n.Logger != "" {
		logger += "/" + n.Logger
	}
	g.sendLogAs(n.Server, n.Client, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(n.Level), Logger: logger, Data: n.Data})
}

func (g *Gateway) sendLogAs(server, client string, p *mcp.LoggingMessageParams) {
	var sent map[*mcp.ServerSession]bool // on a call's stream (see relayLogs)
	for _, l := range g.relays.of(server) {
		if sent[l.ss] || client != "" && l.client != client {
			continue
		}
		if l.send(p) && l.ss != nil { // a sessionless call has a stream of its own
			if sent == nil {
				sent = map[*mcp.ServerSession]bool{}
			}
			sent[l.ss] = true
		}
	}
	for _, ep := range g.hearing(server) {
		for ss := range ep.srv.Sessions() {
			if sent[ss] || client != "" && g.clients.labelOf(ss) != client {
				continue // sent already, or another client's session said it
			}
			ctx, cancel := context.WithTimeout(g.ctx, logSendTimeout)
			_ = ss.Log(ctx, p)
			cancel()
		}
	}
}

// sendUpdate sends a server's notifications/resources/updated to the
// endpoints serving that server; the go-sdk server delivers it to the
// sessions subscribed to the URI, in the order sent.
func (g *Gateway) sendUpdate(server, uri string, meta map[string]any) {
	for _, ep := range g.serving(server) {
		// The SDK writes a session's subscription id into _meta: each
		// endpoint gets a copy of its own.
		p := &mcp.ResourceUpdatedNotificationParams{URI: uri, Meta: maps.Clone(meta)}
		if err := ep.srv.ResourceUpdated(g.ctx, p); err != nil {
			g.log.Debug("resource update not forwarded", "server", server, "uri", uri, "endpoint", ep.path, "error", fmt.Sprint(err))
		}
	}
}

// makeUp answers a report of what the listener's queue could not take
// (the gateway fell behind for a stall): every resource a client holds a
// subscription to on that server is sent as updated, since any may have
// been, and the clients are told how many log messages they missed.
func (g *Gateway) makeUp(n notify.Lost) {
	g.log.Warn("the gateway fell behind a server's notifications", "server", n.Server,
		"resource_updates", n.ResourceUpdates, "log_messages", n.LogMessages)
	if n.ResourceUpdates > 0 {
		for _, uri := range g.clients.subscribedAt(n.Server) {
			g.sendUpdate(n.Server, uri, nil)
		}
	}
	if n.LogMessages > 0 {
		g.sendLogAs(n.Server, n.Client, &mcp.LoggingMessageParams{Level: "warning", Logger: n.Server,
			Data: fmt.Sprintf("%d log messages of %s were not delivered: the gateway fell behind", n.LogMessages, n.Server)})
	}
}
