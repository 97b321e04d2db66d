package gateway

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager"
)

// settling knows which declared servers have not had their first say yet
// (manager.Status.Settled: connected, failed, backing off, waiting for a
// login or a slot), so that a client that lists at once is answered with
// every server that is going to be there, not with whichever happened to
// connect first. Each server is waited for at most the gateway's Wait from
// when it was first seen starting: one that takes longer is left to
// announce itself with list_changed.
//
// The run goroutine owns everything but state, which it publishes for
// request handlers: the servers still waited for, and a channel closed
// when that changes.
type settling struct {
	wait  time.Duration
	heard map[string]bool      // servers that have had their first say since declared or enabled
	since map[string]time.Time // when each server still pending was first seen so
	timer *time.Timer          // fires when the first pending server's wait is over
	state atomic.Pointer[settleState]
}

// settleState is one published answer to "who is still waited for";
// never modified once published.
type settleState struct {
	pending map[string]bool
	changed chan struct{} // closed when a newer state is published
}

// waitsFor reports whether a request for server ("" for any) waits.
func (st *settleState) waitsFor(server string) bool {
	if server == "" {
		return len(st.pending) > 0
	}
	return st.pending[server]
}

func newSettling(wait time.Duration) *settling {
	s := &settling{wait: wait, heard: map[string]bool{}, since: map[string]time.Time{}, timer: time.NewTimer(time.Hour)}
	s.timer.Stop()
	s.state.Store(&settleState{changed: make(chan struct{})})
	return s
}

// forget makes a server start over: it was declared (again) or disabled,
// and has its first say to have once it is enabled.
func (s *settling) forget(server string) {
	delete(s.heard, server)
	delete(s.since, server)
}

// update reads the status of every server not heard from yet. It returns whether a server has had its first say since the
// last update, for the caller to relist before the waiting clients go on
// (what a server that has just been heard from offers is read after its
// status, so a view built now has it).
func (s *settling) update(src Source, now time.Time) (heardNew bool) {
	names := src.Names()
	declared := make(map[string]bool, len(names))
	var next time.Time
	for _, name := range names {
		declared[name] = true
		if s.heard[name] {
			continue
		}
		st, err := src.Status(name)
		switch {
		case err != nil || st.State == manager.StateDisabled || st.State == manager.StateClosing || st.State == manager.StateRemoved:
			delete(s.since, name) // not waited for: it is not going to connect
			continue
		case st.Settled():
			s.heard[name], heardNew = true, true
			delete(s.since, name)
			continue
		}
		first, ok := s.since[name]
		if !ok {
			first = now
			s.since[name] = now
		}
		end := first.Add(s.wait)
		if !now.Before(end) {
			s.heard[name] = true // waited for long enough
			delete(s.since, name)
			continue
		}
		if next.IsZero() || end.Before(next) {
			next = end
		}
	}
	for name := range s.heard {
		if !declared[name] {
			delete(s.heard, name)
		}
	}
	for name := range s.since {
		if !declared[name] {
			delete(s.since, name)
		}
	}
	s.timer.Stop()
	if !next.IsZero() {
		s.timer.Reset(next.Sub(now))
	}
	return heardNew
}

// pending reports whether a server is still waited for.
func (s *settling) pending() bool { return len(s.since) > 0 }

// publish tells request handlers which servers are still waited for,
// when that changed.
func (s *settling) publish() {
	cur := s.state.Load()
	if len(cur.pending) == len(s.since) {
		same := true
		for name := range s.since {
			same = same && cur.pending[name]
		}
		if same {
			return
		}
	}
	next := &settleState{pending: make(map[string]bool, len(s.since)), changed: make(chan struct{})}
	for name := range s.since {
		next.pending[name] = true
	}
	s.state.Store(next)
	close(cur.changed)
}

// settled waits until the servers a request of ep is answered from have
// had their first say (or been waited for long enough): every server,
// or on a server's own endpoint that server. It gives up when ctx ends,
// the gateway closes or Wait has passed.
func (ep *endpoint) settled(ctx context.Context) {
	g := ep.g
	if g.opts.Wait <= 0 {
		return
	}
	server := ""
	if ep.sel == oneServer {
		server = ep.name
	}
	var bound *time.Timer
	for {
		st := g.settle.state.Load()
		if !st.waitsFor(server) {
			return
		}
		if bound == nil {
			bound = time.NewTimer(g.opts.Wait)
			defer bound.Stop()
		}
		select {
		case <-st.changed:
		case <-ctx.Done():
			return
		case <-bound.C:
			return
		case <-g.ctx.Done():
			return
		}
	}
}

// waitsForServers reports whether a request of method is answered from
// what the servers offer, so that asked before they have had their first
// say it waits for them: the lists, reads of resources, prompts and
// completions. A tools/call waits only for a tool not listed yet
// (unknownTools).
func waitsForServers(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list",
		"resources/read", "prompts/get", "completion/complete":
		return true
	}
	return false
}

// settleFirst makes the requests waitsForServers names wait until the
// servers have had their first say.
func (ep *endpoint) settleFirst(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if waitsForServers(method) && !ep.isStatus(req) {
			ep.settled(ctx)
		}
		return next(ctx, method, req)
	}
}
