// Package events is mcpvisor's broadcast bus: every lifecycle change of every
// server is published once as an [Event] and delivered to each subscriber —
// the log, the HUD, Lua hooks and OpenTelemetry.
//
// An event's kind says what happened; its Payload ([Bus.Emit]) is the
// typed detail, defined by the package that publishes it (the manager's
// lifecycle: manager.Connected, manager.BackingOff, …; the gateway's
// clients: gateway.ClientConnected; the Lua runtime's failures:
// luaapi.HookError), which a consumer such as the HUD reads by type.
// Fields is the same detail as plain data, rendered by the payload once at
// publication, for Lua hooks, the log and the history. The bus carries
// lifecycle, not data: what servers say (log messages, resource updates)
// goes to each consumer on the manager's own lossless path (package
// manager/notify), where a dropped resource update cannot go unnoticed.
//
// The bus follows the semantics of tokio's broadcast channel rather than a
// "latest value" watch: every subscriber sees every event, in order, or is told
// exactly how many it missed.
//
//   - Publishing never blocks the publisher. Publish takes one short lock,
//     stamps the event with the next sequence number and the time, and
//     appends it to each subscriber's bounded ring. It never waits on a
//     subscriber.
//   - Nothing is lost silently. When a subscriber's ring is full the oldest
//     queued event is dropped and counted; the next [Subscription.Recv]
//     returns a [KindLagged] event whose "missed" field is that exact count,
//     then delivery resumes with the oldest event still held.
//   - Events are delivered in publication order, so the events of one server
//     arrive in the order they happened, and Seq is strictly increasing
//     across the whole bus.
//
// A subscriber may take some kinds only passively ([SubscribeOptions.Passive]):
// it receives them when they are published, but does not ask for them.
// [Bus.Wants] reports whether anyone asks for a kind, without a lock or an
// allocation, so that the publisher of a frequent kind (the manager's
// tool_call, one per call) can leave unbuilt and unpublished an event that
// only passive subscribers would see: no payload, no lock, no subscriber
// woken. Such an event is not in the history either.
//
// The bus also keeps a bounded history ring that serves "the last n events"
// queries (mcp_events in Lua).
//
// # Concurrency
//
// Bus and Subscription are safe for concurrent use. The bus's mutex guards the
// sequence counter, the history ring and the set of subscribers; each
// subscription's own mutex guards its ring. Publish holds the bus lock while it
// appends to the rings, so sequence order and delivery order are the same for
// every subscriber; it never calls out to subscriber code. What the
// subscribers ask for is rebuilt under the bus's mutex when one subscribes,
// closes or changes its passive kinds, and stored in an atomic pointer that
// Wants reads. Emit calls the
// payload's Fields before taking the lock; a payload and its fields are
// immutable once published, and may be read by any goroutine.
//
// # Subscriber duties
//
// A subscriber owns its Subscription: one goroutine should call Recv in a loop
// and Close it when done. Subscribers must not assume they see every event —
// they must handle KindLagged. A subscriber that stops reading costs at most
// its queue size in memory and never slows anybody else. After [Bus.Close],
// Recv drains what is queued and then returns [ErrClosed].
package events
