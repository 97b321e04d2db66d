// Package notify delivers what servers tell their client and consumers
// subscribe to — resource updates, log messages, list changes, progress —
// from the manager to each consumer (the gateway, the Lua runtime), in
// order, without losing any silently.
//
// The events bus (package events) is for lifecycle: a subscriber that
// falls behind loses its oldest events and is told how many, which suits
// a status display but not a client subscribed to a resource, whose
// update, once dropped, is never sent again. A [Hub] instead gives each
// consumer a [Listener] of its own with a bounded queue:
//
//   - Every notice is one of this package's types ([ResourceUpdated],
//     [ListChanged], [LogMessage], [Progress]), a struct whose Fields
//     method renders it for Lua hooks and the log the way a server sent
//     it (kind notification, method and params).
//   - A lossless listener ([ListenOptions.Lossless]) applies back-pressure
//     to resource updates: when its queue is full, the publisher (the
//     server's notification handler) waits for room for as long as the
//     consumer keeps taking notices. Log messages, progress and list
//     changes never wait: the manager rate-limits log messages and progress
//     before they get here, it acts on list changes itself (and announces
//     what changed on the bus), and a full queue drops them.
//   - Nothing is lost silently. What a listener's queue could not take is
//     counted per server and reported to that consumer, at the place in
//     the order where it went missing, as a [Lost] notice, so that it can
//     make up for it (send every subscribed resource as updated, tell its
//     clients how many log messages they missed).
//   - A consumer that stops taking notices for [ListenOptions.Stall] is
//     stalled: its publishers stop waiting for it, and what it misses until
//     it has emptied its queue is counted in a Lost notice. A stuck
//     consumer therefore delays a server's notifications by one stall at
//     most and never blocks anybody else's listener.
//   - Notices of one server session reach every listener in the order the
//     session delivered them (the go-sdk hands a session's notifications
//     over one at a time).
//
// # Concurrency
//
// Hub and Listener are safe for concurrent use. The hub's mutex guards its
// set of listeners; each listener's mutex guards its queue and its counts
// of what was lost. Publish takes neither lock while it waits, and never
// calls consumer code. A consumer owns its listener: one goroutine takes
// notices (TryNext in a loop after Ready, or Next) and Closes it when done;
// it must handle Lost. After [Hub.Close], a listener hands out what is
// queued and then [ErrClosed], and publishers waiting for room return.
package notify
