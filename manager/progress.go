package manager

import (
	"strconv"
	"sync"
	"sync/atomic"
)

// progressRoutes maps the progress tokens of calls in flight to their
// callbacks. Tokens are unique per supervisor.
type progressRoutes struct {
	next atomic.Uint64

	mu sync.Mutex
	// mu guards routes.
	routes map[string]func(Progress)
}

// add registers fn under a new token; done removes it.
func (p *progressRoutes) add(fn func(Progress)) (token string, done func()) {
	token = "mcpvisor-" + strconv.FormatUint(p.next.Add(1), 10)
	p.mu.Lock()
	if p.routes == nil {
		p.routes = make(map[string]func(Progress))
	}
	p.routes[token] = fn
	p.mu.Unlock()
	return token, func() {
		p.mu.Lock()
		delete(p.routes, token)
		p.mu.Unlock()
	}
}

// deliver hands a notification to the call that asked for it. Unknown
// tokens (a late notification after the call ended) are dropped.
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
