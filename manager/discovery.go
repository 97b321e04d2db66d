package manager

import (
	"context"
	"errors"
	"sync"

	"github.com/mcpvisor/mcpvisor/events"
)

// refreshReq asks the supervisor to re-list kinds now and reply.
type refreshReq struct {
	kinds listKind
	reply chan error // buffered
}

// markDirty records that the server announced a changed list. It runs on
// the SDK's notification goroutine and never blocks: repeated
// notifications coalesce into one re-list, so a flood of them never
// stalls the session.
func (s *supervisor) markDirty(k listKind) {
	for {
		old := s.dirty.Load()
		if s.dirty.CompareAndSwap(old, old|int32(k)) {
			break
		}
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// rediscover re-lists kinds on the live connection and publishes the new
// catalog and what changed (a tools_changed, resources_changed or
// prompts_changed event with the added and removed names). It runs on the
// supervisor goroutine, bounded by the request timeout.
func (s *supervisor) rediscover(c *conn, kinds listKind) error {
	if kinds == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeoutCause(s.ctx, s.spec.Timeouts.Request, timeoutError{s.spec.Timeouts.Request})
	defer cancel()
	prev := s.snap.Load().cat
	next, err := discover(ctx, c.session, prev, kinds)
	if err != nil {
		op := "discover"
		var de *discoverError
		if errors.As(err, &de) {
			op, err = de.op, de.err
		}
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		if s.ctx.Err() == nil { // not worth a warning while being removed
			s.m.log.Warn("re-listing failed", "server", s.name, "op", op, "error", err)
		}
		return newError(CodeInvocationFailed, s.name, op, err)
	}
	s.transition(StateConnected, func(n *snapshot) {
		n.cat = next
		n.status.setCatalog(next)
	}, nil)
	s.publishChanges(prev, next, kinds)
	s.publishRefused(next)
	return nil
}

// publishChanges emits tools_changed, resources_changed and
// prompts_changed for the kinds whose names differ.
func (s *supervisor) publishChanges(prev, next *catalog, kinds listKind) {
	for _, k := range []struct {
		kind  listKind
		event events.Kind
		names func(*catalog) []string
	}{
		{listTools, events.KindToolsChanged, (*catalog).toolNames},
		{listResources, events.KindResourcesChanged, (*catalog).resourceNames},
		{listPrompts, events.KindPromptsChanged, (*catalog).promptNames},
	} {
		if kinds&k.kind == 0 {
			continue
		}
		added, removed := diffNames(k.names(prev), k.names(next))
		if len(added) > 0 || len(removed) > 0 {
			s.emit(ItemsChanged{Of: k.event, Added: added, Removed: removed})
		}
	}
}

// refresh asks the supervisor to re-list everything on the live session
// and waits for it. A server that is not connected is waited for, up to
// ctx, like a call.
func (s *supervisor) refresh(ctx context.Context) error {
	if _, err := s.session(ctx, "discover", false); err != nil {
		return err
	}
	s.gate.exit() // the supervisor does the listing
	req := refreshReq{kinds: listAll, reply: make(chan error, 1)}
	select {
	case s.requests <- req:
	case <-ctx.Done():
		return newError(CodeInvocationFailed, s.name, "discover", context.Cause(ctx))
	case <-s.done:
		return errorf(CodeClosed, s.name, "discover", "server was removed")
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return newError(CodeInvocationFailed, s.name, "discover", context.Cause(ctx))
	}
}

// Discover returns the tools of server (or of every server when server is
// ""). Discovery is cached: without force it returns what the last
// discovery found. With force it re-lists every connected server in
// parallel, each bounded by its request timeout, so a slow or failing
// server never delays another; servers that could not be refreshed are in
// errs by name, and their last known tools stay listed.
func (m *Manager) Discover(ctx context.Context, server string, force bool) (tools []ToolInfo, errs map[string]error, err error) {
	sups := m.supervisors()
	if server != "" {
		s, err := m.lookup(server, "discover")
		if err != nil {
			return nil, nil, err
		}
		sups = []*supervisor{s}
	}
	if force {
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		for _, s := range sups {
			wg.Go(func() {
				sctx, cancel := context.WithTimeoutCause(ctx, s.spec.Timeouts.Request, timeoutError{s.spec.Timeouts.Request})
				defer cancel()
				if err := s.refresh(sctx); err != nil {
					mu.Lock()
					if errs == nil {
						errs = make(map[string]error)
					}
					errs[s.name] = err
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	} else {
		// Cached: servers that never connected have nothing to show; say why.
		for _, s := range sups {
			if snap := s.snap.Load(); snap.cat == nil && snap.status.LastError != "" {
				if errs == nil {
					errs = make(map[string]error)
				}
				errs[s.name] = errorf(CodeConnectionFailed, s.name, "discover", "not connected (%s): %s", snap.status.State, snap.status.LastError)
			}
		}
	}
	tools, err = m.Tools(server)
	return tools, errs, err
}
