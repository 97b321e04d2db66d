package gateway

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// connLimiter is a listener that caps its open connections, and more
// tightly those on which no request has yet passed the gateway's checks
// (Host, Origin, token): idle or silent connections cannot starve the
// clients. A connection over a cap is answered 503 and closed at once.
type connLimiter struct {
	net.Listener
	max, maxUnauth int

	mu sync.Mutex
	// mu guards the following, and each limitedConn's authed and closed.
	open   int // connections accepted and not yet closed
	unauth int // of those, the ones not yet authenticated
}

func newConnLimiter(ln net.Listener, max, maxUnauth int) *connLimiter {
	return &connLimiter{Listener: ln, max: max, maxUnauth: maxUnauth}
}

// tooManyConns is what a connection over a cap is told.
var tooManyConns = func() []byte {
	body := "mcpvisor has too many open connections; try again in a few seconds\n"
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"+
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit() {
			return &limitedConn{Conn: c, l: l}, nil
		}
		// A fresh socket's send buffer takes the answer at once; the
		// deadline only guards against the unexpected.
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write(tooManyConns)
		_ = c.Close()
	}
}

func (l *connLimiter) admit() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max || l.unauth >= l.maxUnauth {
		return false
	}
	l.open++
	l.unauth++
	return true
}

// connKey is the context key of a request's *limitedConn.
type connKey struct{}

// connContext is the http.Server's ConnContext: it lets a request's
// handler mark its connection authenticated.
func (l *connLimiter) connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// limitedConn is a connection counted by its connLimiter until it closes.
type limitedConn struct {
	net.Conn
	l *connLimiter
	// authed is set once a request on the connection passed the checks;
	// it changes, as closed does, under l.mu only.
	authed atomic.Bool
	closed bool
}

// Authenticated counts the connection of r, a request to a handler served
// beside the gateway that checks the token itself (HTTPOptions.Console),
// as authenticated, as the gateway does for a request with the token: it
// no longer counts against HTTPOptions.MaxUnauthConns.
func Authenticated(r *http.Request) { authenticated(r) }

// authenticated moves the connection of r, if it is counted, from the
// unauthenticated ones to the others: a request on it passed the checks.
func authenticated(r *http.Request) {
	lc, ok := r.Context().Value(connKey{}).(*limitedConn)
	if !ok || lc.authed.Load() {
		return
	}
	lc.l.mu.Lock()
	defer lc.l.mu.Unlock()
	if !lc.authed.Load() && !lc.closed {
		lc.authed.Store(true)
		lc.l.unauth--
	}
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	if !c.closed {
		c.closed = true
		c.l.open--
		if !c.authed.Load() {
			c.l.unauth--
		}
	}
	c.l.mu.Unlock()
	return c.Conn.Close()
}
