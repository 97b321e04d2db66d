package retry

import (
	"fmt"
	"time"
)

// Circuit is the state of a circuit breaker: closed, open after too many
// consecutive failed attempts within a window, half open for the one
// probe attempt after OpenFor.
type Circuit int

// The breaker states. The zero value is Closed.
const (
	Closed   Circuit = iota // attempts follow the backoff schedule
	Open                    // no attempts until the probe is due
	HalfOpen                // exactly one probe attempt is in progress
)

var circuitNames = [...]string{Closed: "closed", Open: "open", HalfOpen: "half_open"}

func (c Circuit) String() string {
	if c >= 0 && int(c) < len(circuitNames) {
		return circuitNames[c]
	}
	return fmt.Sprintf("Circuit(%d)", int(c))
}

// BreakerConfig configures the circuit breaker of a [Policy].
type BreakerConfig struct {
	// Disabled turns the breaker off: it never opens.
	Disabled bool
	// Failures is how many consecutive failed attempts within Window open
	// the circuit.
	Failures int
	Window   time.Duration
	// OpenFor is how long the circuit stays open before one probe
	// attempt (plus jitter, see [Policy.Failed]).
	OpenFor time.Duration
}

// breaker decides when a circuit opens and when it may probe.
type breaker struct {
	cfg   BreakerConfig
	state Circuit
	// fails are the times of the consecutive failed attempts, oldest
	// first, at most cfg.Failures of them.
	fails    []time.Time
	openedAt time.Time
	wait     time.Duration // from openedAt to the probe
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
	if b.state == HalfOpen {
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
	b.state = Open
	b.openedAt = now
	b.fails = b.fails[:0]
}

// success records a successful attempt: the circuit closes. It reports
// the state the circuit was in. The failures stay counted until the
// session proves itself (reset): a server that crashes right
// after each handshake must still trip the breaker (a crash loop).
func (b *breaker) success() Circuit {
	was := b.state
	b.state = Closed
	b.openedAt = time.Time{}
	return was
}

// reset closes the circuit and forgets every failure. It reports the
// state the circuit was in.
func (b *breaker) reset() Circuit {
	was := b.state
	b.state = Closed
	b.fails = b.fails[:0]
	b.openedAt = time.Time{}
	return was
}

// probeAt is when an open circuit lets one probe attempt through.
func (b *breaker) probeAt() time.Time {
	return b.openedAt.Add(b.wait)
}

// halfOpen lets the probe through.
func (b *breaker) halfOpen() {
	b.state = HalfOpen
}
