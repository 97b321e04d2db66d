package manager

import (
	"sync"
	"time"
)

// maxRecentCalls is how many calls [Manager.RecentCalls] keeps per server.
const maxRecentCalls = 20

// RecentCall is one finished tool call, as [Manager.RecentCalls] keeps it.
type RecentCall struct {
	// Time is when it ended.
	Time time.Time
	ToolCall
}

// recentCalls is a server's last calls: a fixed ring that a call writes
// without allocating, so that showing recent calls costs a call nothing
// when nobody asks for its tool_call event (see callEvent).
type recentCalls struct {
	mu sync.Mutex
	// mu guards the following.
	ring [maxRecentCalls]RecentCall
	next int // where the next call goes
	n    int // calls held
}

func (r *recentCalls) add(c RecentCall) {
	r.mu.Lock()
	r.ring[r.next] = c
	r.next = (r.next + 1) % len(r.ring)
	r.n = min(r.n+1, len(r.ring))
	r.mu.Unlock()
}

// newestFirst returns the calls held, the newest first.
func (r *recentCalls) newestFirst() []RecentCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RecentCall, r.n)
	for i := range r.n {
		out[i] = r.ring[(r.next-1-i+2*len(r.ring))%len(r.ring)]
	}
	return out
}

// RecentCalls returns the last tool calls of a server (up to 20), the
// newest first, whatever their outcome: a per-client server's include its
// clients' calls. It needs no subscriber: every call is kept, published
// or not.
func (m *Manager) RecentCalls(name string) ([]RecentCall, error) {
	s, err := m.lookup(name, "recent calls")
	if err != nil {
		return nil, err
	}
	return s.recent.newestFirst(), nil
}
