package manager

import (
	"errors"
	"sync"
	"time"
)

// Metrics are one server's counters. Counts cover the server's whole life,
// across reconnects.
type Metrics struct {
	Server  string
	State   State
	Circuit Circuit
	// ConnectedFor is how long the current session has been up (zero when
	// not connected).
	ConnectedFor time.Duration
	// Requests counts requests that reached the server (tool calls,
	// resource reads, prompt gets), whatever their outcome.
	Requests uint64
	Errors   ErrorCounts
	// Latency is an exponential moving average of request durations
	// (weight 0.2 for the newest), leaving out requests the caller
	// cancelled: how long those took says how soon the caller gave up.
	Latency time.Duration
	// LastActivity is when a request last started or finished.
	LastActivity time.Time
	// InFlight is how many requests are running now.
	InFlight int
	// Reconnects counts sessions established after the first.
	Reconnects uint64
	// Sessions are the clients' sessions of a per-client server; the
	// counters above include their requests.
	Sessions []ClientSession
}

// callStats is where s's requests are counted: a client's session counts
// in its server's.
func (s *supervisor) callStats() *callStats {
	if s.home != nil {
		return &s.home.stats
	}
	return &s.stats
}

// ErrorCounts splits the requests that did not succeed by cause.
type ErrorCounts struct {
	Timeout    uint64 // our deadline or the caller's ran out
	Disconnect uint64 // the session was lost under the request
	Protocol   uint64 // the server answered with a JSON-RPC error or garbage
	Tool       uint64 // a tool result with isError set
	// Cancelled counts requests the caller gave up on (Ctrl-C, its
	// context cancelled): no failure of the server's.
	Cancelled uint64
}

// Total is the number of failures: every kind but Cancelled, which the
// caller chose.
func (e ErrorCounts) Total() uint64 { return e.Timeout + e.Disconnect + e.Protocol + e.Tool }

// PoolMetrics are the totals over every server.
type PoolMetrics struct {
	Servers    int
	ByState    map[State]int
	Requests   uint64
	Errors     ErrorCounts
	InFlight   int
	Reconnects uint64
}

// emaWeight is the newest sample's weight in Metrics.Latency.
const emaWeight = 0.2

// callStats accumulates a supervisor's request metrics. Requests update it
// from any goroutine.
type callStats struct {
	mu sync.Mutex
	// mu guards the following.
	requests   uint64
	errors     ErrorCounts
	samples    uint64  // requests in latency
	latency    float64 // nanoseconds, EMA
	lastUse    time.Time
	reconnects uint64
}

// touch records activity now (a request starting).
func (c *callStats) touch(now time.Time) {
	c.mu.Lock()
	c.lastUse = now
	c.mu.Unlock()
}

// record accounts one request that reached the server, started at start
// and ended now with err (nil on success) or a tool error result.
func (c *callStats) record(start, now time.Time, err error, toolError bool) {
	d := float64(now.Sub(start))
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	c.lastUse = now
	if errors.Is(err, ErrCancelled) {
		c.errors.Cancelled++
		return
	}
	c.samples++
	if c.samples == 1 {
		c.latency = d
	} else {
		c.latency += emaWeight * (d - c.latency)
	}
	switch {
	case toolError:
		c.errors.Tool++
	case err == nil:
	case errors.Is(err, ErrTimeout):
		c.errors.Timeout++
	case errors.Is(err, ErrDisconnected):
		c.errors.Disconnect++
	default:
		c.errors.Protocol++
	}
}

func (c *callStats) reconnected() {
	c.mu.Lock()
	c.reconnects++
	c.mu.Unlock()
}

// metrics fills the counters of m.
func (c *callStats) fill(m *Metrics) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m.Requests = c.requests
	m.Errors = c.errors
	m.Latency = time.Duration(c.latency)
	m.LastActivity = c.lastUse
	m.Reconnects = c.reconnects
}

// Metrics returns one server's counters.
func (m *Manager) Metrics(name string) (Metrics, error) {
	s, err := m.lookup(name, "metrics")
	if err != nil {
		return Metrics{}, err
	}
	return s.metrics(), nil
}

func (s *supervisor) metrics() Metrics {
	st := s.snap.Load().status
	out := Metrics{Server: s.name, State: st.State, Circuit: st.Circuit, InFlight: s.gate.inFlight()}
	if st.State == StateConnected {
		out.ConnectedFor = time.Since(st.ConnectedAt)
	}
	s.stats.fill(&out)
	if s.clients != nil {
		out.Sessions = s.clients.sessions()
		for _, c := range s.clients.list() {
			out.InFlight += c.gate.inFlight()
		}
	}
	return out
}

// PoolMetrics returns the totals over every server.
func (m *Manager) PoolMetrics() PoolMetrics {
	p := PoolMetrics{ByState: make(map[State]int)}
	for _, s := range m.supervisors() {
		sm := s.metrics()
		p.Servers++
		p.ByState[sm.State]++
		p.Requests += sm.Requests
		p.Errors.Timeout += sm.Errors.Timeout
		p.Errors.Disconnect += sm.Errors.Disconnect
		p.Errors.Protocol += sm.Errors.Protocol
		p.Errors.Tool += sm.Errors.Tool
		p.Errors.Cancelled += sm.Errors.Cancelled
		p.InFlight += sm.InFlight
		p.Reconnects += sm.Reconnects
	}
	return p
}

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
