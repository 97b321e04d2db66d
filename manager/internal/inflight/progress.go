package inflight

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Progress maps the progress tokens of requests in flight to their
// callbacks. Tokens are unique per Progress. The zero value is ready to
// use.
type Progress[T any] struct {
	next atomic.Uint64

	mu sync.Mutex
	// mu guards routes.
	routes map[string]func(T)
}

// Add registers fn under a new token; done removes it after grace (at
// once when grace is zero).
func (p *Progress[T]) Add(fn func(T), grace time.Duration) (token string, done func()) {
	token = "mcpvisor-" + strconv.FormatUint(p.next.Add(1), 10)
	p.mu.Lock()
	if p.routes == nil {
		p.routes = make(map[string]func(T))
	}
	p.routes[token] = fn
	p.mu.Unlock()
	remove := func() {
		p.mu.Lock()
		delete(p.routes, token)
		p.mu.Unlock()
	}
	return token, func() {
		if grace == 0 {
			remove()
			return
		}
		time.AfterFunc(grace, remove)
	}
}

// Deliver hands a notification to the request that asked for it. Unknown
// tokens (a notification more than Grace after the request ended, or a
// token that is not ours) are dropped.
func (p *Progress[T]) Deliver(token any, v T) {
	t, ok := token.(string)
	if !ok {
		return
	}
	p.mu.Lock()
	fn := p.routes[t]
	p.mu.Unlock()
	if fn != nil {
		fn(v)
	}
}

// Grace is how long a finished request's route still takes
// notifications when the request went through the SDK's session. The SDK
// hands a response to its caller on the reader goroutine but
// notifications to a handler goroutine, so progress the server sent just
// before its answer is often handled just after the call returned;
// removing the route at once dropped it. A caller that has seen every
// notification sent before the answer handled when its request ends (the
// raw call path) needs none.
const Grace = time.Second
