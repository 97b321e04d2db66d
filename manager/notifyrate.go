package manager

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/mcpvisor/mcpvisor/events"
)

// Bounds on what one server's notifications may cost. Each becomes an
// event for the log, the HUD, Lua hooks and gateway clients; a server
// sending tens of thousands a second slowed every other server's calls.
// Past the rate, notifications are dropped (list changes still mark the
// lists for re-listing, and progress still reaches its call) and how many
// were dropped is published with the next notification that gets through.
const (
	notifyRate  = 500 // a second, sustained
	notifyBurst = 1000
)

// notifyLimiter rate-limits the notification events of one server. It is
// called from the SDK's notification goroutines.
type notifyLimiter struct {
	lim *rate.Limiter

	mu sync.Mutex
	// mu guards dropped.
	dropped int
}

func newNotifyLimiter() *notifyLimiter {
	return &notifyLimiter{lim: rate.NewLimiter(notifyRate, notifyBurst)}
}

// allow reports whether a notification may be published now; when it may
// after some were dropped, it also returns how many were.
func (l *notifyLimiter) allow(now time.Time) (ok bool, dropped int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok = l.lim.AllowN(now, 1)
	if !ok {
		l.dropped++
		return false, 0
	}
	dropped, l.dropped = l.dropped, 0
	return true, dropped
}

// publishNotification publishes one notification event of s, within the
// rate; it reports drops as a notifications_dropped event.
func (s *supervisor) publishNotification(method string, params any) {
	ok, dropped := s.notify.allow(time.Now())
	if dropped > 0 {
		s.m.bus.Publish(events.KindNotificationsDropped, s.name, events.Fields{"dropped": dropped, "rate": notifyRate})
	}
	if ok {
		s.m.bus.Publish(events.KindNotification, s.name, events.Fields{"method": method, "params": params})
	}
}
