package manager

import (
	"context"
	"net"
	"time"
)

// SetHTTPDialer makes m's own HTTP transport (the pool every HTTP and SSE
// server of m shares) open its connections with dial instead of the
// network, and use no proxy from the environment. Tests use it to run the
// real transport over an in-memory network inside a synctest bubble, where
// sockets cannot be used. Call it before adding servers.
func SetHTTPDialer(m *Manager, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	m.http.DialContext = dial
	m.http.Proxy = nil
}

// SessionEndGrace is how long the host waits for the SDK's reason once it
// has begun ending an HTTP session, before reporting the session lost.
const SessionEndGrace = sessionEndGrace

// CloseIdleHTTP closes the idle connections of m's shared HTTP pool, as
// its IdleConnTimeout does after 90s without requests.
func CloseIdleHTTP(m *Manager) { m.http.CloseIdleConnections() }

// SetServeHook runs hook (nil: nothing) each time a supervisor has
// published a connection, on the supervisor's goroutine.
func SetServeHook(hook func(server string)) {
	if hook == nil {
		testHookHold.Store(nil)
		return
	}
	testHookHold.Store(&hook)
}

// SetLoginPoll makes m's servers that wait for a login look for one every
// every instead of every couple of seconds, and run polled (nil: nothing)
// after each look, on the supervisor's goroutine. Call it before adding
// servers.
func SetLoginPoll(m *Manager, every time.Duration, polled func(server string)) {
	m.loginPoll, m.loginPolled = every, polled
}
