package gateway

import (
	"time"

	"github.com/mcpvisor/mcpvisor/events"
)

// follow takes the events the source has published: it relists if they
// changed what is offered, and tells the clients waiting for the servers'
// first say whether to go on. It reports false once the bus has closed
// (the host is shutting down).
func (g *Gateway) follow(sub *events.Subscription) bool {
	var grows, shrinks bool
	// Whether a server may have had its say or started to be waited for;
	// a burst of calls' events alone leaves the settling as it was.
	moved := g.settle.pending()
	for {
		e, ok, err := sub.TryRecv()
		if err != nil {
			return false
		}
		if !ok {
			break
		}
		switch g.change(e) {
		case listsGrow:
			grows = true
		case listsShrink:
			shrinks = true
		}
		moved = moved || (changesLists(e.Kind) || changesState(e.Kind)) && e.Text("client") == ""
		if (e.Kind == events.KindAdded || e.Kind == events.KindDisabled) && e.Text("client") == "" {
			g.settle.forget(e.Server)
		}
	}
	// Settling first: a server heard from now has its items read by the
	// relisting that follows, before the clients waiting for it go on.
	settled := moved && g.settle.update(g.src, time.Now())
	switch {
	case settled || grows:
		g.refresh()
	case shrinks && !g.relisting:
		g.relisting = true
		g.relist.Reset(shrinkDelay)
	}
	g.settle.publish()
	return true
}

// shrinkDelay is how long what leaves the lists (a server removed,
// disabled, failed or restarting) stays listed before the endpoints
// relist, unless something is added first. A server restarted by a
// reload of the config, or one that reconnects at once, comes back
// within it and its clients see no list change at all; a burst of
// removals reaches each client as one list_changed per list. A call to
// a tool that is leaving is answered with the reason its server is down.
const shrinkDelay = 500 * time.Millisecond

// listChange is how an event can change what the endpoints list.
type listChange int

const (
	listsSame listChange = iota
	listsGrow
	listsShrink
)

// change tells how e can change what the endpoints list. A client's own
// session of a per-client server changes nothing: the server's own
// session lists its tools. A server that connects, is added, changes its
// lists or comes back may add to them (or replace items, which is
// applied at once too); one that is removed or turns off only takes away.
func (g *Gateway) change(e events.Event) listChange {
	if e.Text("client") != "" {
		return listsSame
	}
	switch {
	case e.Kind == events.KindRemoved:
		return listsShrink
	case changesLists(e.Kind):
		return listsGrow
	case e.Server == "" || !changesState(e.Kind):
		return listsSame
	}
	// A change of state turns a server's items on or off (see offered):
	// disabled, enabled, failed for good, recovered.
	st, err := g.src.Status(e.Server)
	on := err == nil && offered(st.State)
	switch {
	case on != g.currentView().down[e.Server]:
		return listsSame
	case on:
		return listsGrow
	}
	return listsShrink
}

// changesState reports whether an event of kind k is a server's change
// of state.
func changesState(k events.Kind) bool {
	switch k {
	case events.KindConnecting, events.KindBackoff, events.KindCircuit, events.KindFailed,
		events.KindUnauthorized, events.KindIdle, events.KindClosing, events.KindDisabled:
		return true
	}
	return false
}

// changesLists reports whether an event of kind k can change what the
// endpoints list.
func changesLists(k events.Kind) bool {
	switch k {
	case events.KindAdded, events.KindRemoved, events.KindConnected,
		events.KindToolsChanged, events.KindResourcesChanged, events.KindPromptsChanged,
		events.KindLagged:
		return true
	}
	return false
}
