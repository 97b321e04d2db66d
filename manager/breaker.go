package manager

import (
	"fmt"
	"math"
	"time"
)

// Circuit is the state of a server's circuit breaker: closed, open after
// too many consecutive failed attempts within a window, half open for the
// one probe attempt after OpenFor.
type Circuit int

// The breaker states. The zero value is CircuitClosed.
const (
	CircuitClosed   Circuit = iota // attempts follow the backoff schedule
	CircuitOpen                    // no attempts until the probe is due
	CircuitHalfOpen                // exactly one probe attempt is in progress
)

var circuitNames = [...]string{CircuitClosed: "closed", CircuitOpen: "open", CircuitHalfOpen: "half_open"}

func (c Circuit) String() string {
	if c >= 0 && int(c) < len(circuitNames) {
		return circuitNames[c]
	}
	return fmt.Sprintf("Circuit(%d)", int(c))
}

// breaker decides when a server's circuit opens and when it may probe. It
// is pure: the supervisor feeds it outcomes with the time they happened and
// asks what to do; it owns no goroutine and no timer.
type breaker struct {
	cfg   Breaker
	state Circuit
	// fails are the times of the consecutive failed attempts, oldest
	// first, at most cfg.Failures of them.
	fails    []time.Time
	openedAt time.Time
	wait     time.Duration // from openedAt to the probe
}

func newBreaker(cfg Breaker) *breaker {
	return &breaker{cfg: cfg}
}

// failure records a failed attempt at now and reports whether the circuit
// opened because of it: the cfg.Failures-th consecutive failure within
// cfg.Window, or a failed half-open probe (which restarts the open timer).
//
// jitter in [0, 1) delays the probe by that fraction of OpenFor beyond
// OpenFor: servers whose circuits opened together (a shared dependency
// went down) then probe spread over OpenFor instead of all at once, every
// time. Zero keeps the probe exactly OpenFor after opening.
func (b *breaker) failure(now time.Time, jitter float64) bool {
	if b.cfg.Disabled {
		return false
	}
	b.wait = b.cfg.OpenFor + time.Duration(jitter*float64(b.cfg.OpenFor))
	if b.state == CircuitHalfOpen {
		b.open(now)
		return true
	}
	if len(b.fails) == b.cfg.Failures {
		b.fails = b.fails[1:]
	}
	b.fails = append(b.fails, now)
	if len(b.fails) == b.cfg.Failures && now.Sub(b.fails[0]) <= b.cfg.Window {
		b.open(now)
		return true
	}
	return false
}

func (b *breaker) open(now time.Time) {
	b.state = CircuitOpen
	b.openedAt = now
	b.fails = b.fails[:0]
}

// success records a successful attempt: the circuit closes. It reports
// the state the circuit was in. The failures stay counted until the
// session proves itself (reset): a server that crashes right after each
// handshake must still trip the breaker (a crash loop).
func (b *breaker) success() Circuit {
	was := b.state
	b.state = CircuitClosed
	b.openedAt = time.Time{}
	return was
}

// reset closes the circuit and forgets every failure (mcp_reconnect).
func (b *breaker) reset() {
	b.state = CircuitClosed
	b.fails = b.fails[:0]
	b.openedAt = time.Time{}
}

// probeAt is when an open circuit lets one probe attempt through.
func (b *breaker) probeAt() time.Time {
	return b.openedAt.Add(b.wait)
}

// halfOpen lets the probe through.
func (b *breaker) halfOpen() {
	b.state = CircuitHalfOpen
}

// Delay returns how long to wait after the n-th consecutive failure (n ≥ 1):
//
//	min(Initial · Multiplier^(n−1), Max) + jitter · that · r
//
// where r is uniform in [0, 1) and supplied by the caller, so the schedule is
// pure and testable. b must have its defaults applied.
func (b Backoff) Delay(n int, r float64) time.Duration {
	if n < 1 {
		n = 1
	}
	base := float64(b.Initial) * math.Pow(b.Multiplier, float64(n-1))
	if base > float64(b.Max) || math.IsInf(base, 0) || math.IsNaN(base) {
		base = float64(b.Max)
	}
	return time.Duration(base + b.jitter()*base*r)
}

func (b Backoff) jitter() float64 {
	if b.Jitter == NoJitter {
		return 0
	}
	return b.Jitter
}
