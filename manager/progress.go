package manager

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// progressRoutes maps the progress tokens of calls in flight to their
// callbacks. Tokens are unique per supervisor.
type progressRoutes struct {
	next atomic.Uint64

	mu sync.Mutex
	// mu guards routes.
	routes map[string]func(Progress)
}

// progressGrace is how long a finished call's route still takes
// notifications. The SDK hands a response to its caller on the reader
// goroutine but notifications to a handler goroutine, so progress the
// server sent just before its answer is often handled just after the call
// returned; removing the route at once dropped it.
const progressGrace = time.Second

// add registers fn under a new token; done removes it after progressGrace.
func (p *progressRoutes) add(fn func(Progress)) (token string, done func()) {
	token = "mcpvisor-" + strconv.FormatUint(p.next.Add(1), 10)
	p.mu.Lock()
	if p.routes == nil {
		p.routes = make(map[string]func(Progress))
	}
	p.routes[token] = fn
	p.mu.Unlock()
	return token, func() {
		time.AfterFunc(progressGrace, func() {
			p.mu.Lock()
			delete(p.routes, token)
			p.mu.Unlock()
		})
	}
}

// deliver hands a notification to the call that asked for it. Unknown
// tokens (a notification more than progressGrace after the call ended) are
// dropped.
func (p *progressRoutes) deliver(token any, pr Progress) {
	t, ok := token.(string)
	if !ok {
		return
	}
	p.mu.Lock()
	fn := p.routes[t]
	p.mu.Unlock()
	if fn != nil {
		fn(pr)
	}
}
