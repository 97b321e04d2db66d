// Package inflight routes what concerns a server's requests while they
// are in flight: the cancellation that abandons them when the server goes
// away ([Requests]), who answers what the server asks meanwhile (the
// requests' answerers when they are all one client's, then the answerer
// of the client owning the session: [Requests.Answerers]), and the
// progress the server reports for them ([Progress], by progress token).
//
// # Concurrency
//
// Both types are safe for concurrent use: requests start and end on their
// callers' goroutines, the supervisor abandons them from its own, and the
// SDK delivers progress and questions on its goroutines. Each has one
// mutex guarding its table; nothing is called under it (cancel functions
// and progress callbacks run after it is released). A progress callback
// runs on the goroutine that delivers the notification and must not block.
package inflight
