package retry

import "time"

// Config configures a [Policy].
type Config struct {
	Backoff Schedule
	Breaker BreakerConfig
	// MaxRetries is how many consecutive failures are retried: the
	// policy gives up at failure MaxRetries+1. Less than zero: it never
	// gives up.
	MaxRetries int
	// Rand returns uniform numbers in [0, 1) for the jitter of delays
	// and probes. It must not be nil.
	Rand func() float64
}

// Failure says what failed, for [Policy.Failed].
type Failure int

const (
	// Attempt: a connection attempt failed. The breaker counts it.
	Attempt Failure = iota
	// LostUnproven: a session was lost before it proved itself (see
	// [Policy.Lost]). The breaker counts it as a failed attempt, and the
	// wait is one step longer than after a refused attempt: each turn cost
	// a whole start, handshake and listing.
	LostUnproven
	// LostProven: a proven session was lost. The schedule starts over
	// (Lost forgot the failures before it); the breaker does not count it.
	LostProven
	// Terminal: retrying on the schedule cannot help (the credentials are
	// refused, the program is missing): the policy gives up at once.
	Terminal
)

// Verdict is what comes after a failure.
type Verdict int

const (
	// Backoff: attempt again at Decision.At, Decision.Delay from now.
	Backoff Verdict = iota
	// Opened: the circuit opened; the probe is at Decision.At.
	Opened
	// GiveUp: no attempt until [Policy.Reset].
	GiveUp
)

// Decision is what [Policy.Failed] decided.
type Decision struct {
	Verdict Verdict
	// Failures counts the consecutive failures, this one included.
	Failures int
	// Delay is how long from the failure to At.
	Delay time.Duration
	// At is when the next attempt (Backoff) or the probe (Opened) is due.
	At time.Time
	// From is the circuit's state before it opened (Opened).
	From Circuit
	// Exhausted is true when the policy gives up because MaxRetries is
	// reached (a terminal failure may also reach it).
	Exhausted bool
}

// Policy is one server's retry policy: the count of consecutive failures,
// the circuit breaker and the backoff schedule.
type Policy struct {
	cfg      Config
	failures int
	brk      breaker
}

// New returns a policy with no failures and its circuit closed.
func New(cfg Config) *Policy {
	return &Policy{cfg: cfg, brk: breaker{cfg: cfg.Breaker}}
}

// Failures is the number of consecutive failures counted: the next
// attempt is attempt Failures()+1.
func (p *Policy) Failures() int { return p.failures }

// Circuit is the breaker's state.
func (p *Policy) Circuit() Circuit { return p.brk.state }

// ProbeAt is when an open circuit lets one probe attempt through.
func (p *Policy) ProbeAt() time.Time { return p.brk.probeAt() }

// Probe lets the probe attempt through when the circuit is open (it is
// half open until the attempt's outcome is recorded) and reports whether
// it was open.
func (p *Policy) Probe() bool {
	if p.brk.state != Open {
		return false
	}
	p.brk.halfOpen()
	return true
}

// Failed records a failure at now and decides what comes next: give up
// when it is terminal or the retry limit is reached, open the circuit when
// the breaker says so, or else back off on the schedule.
func (p *Policy) Failed(now time.Time, what Failure) Decision {
	p.failures++
	n := p.failures
	d := Decision{Failures: n}
	if limit := p.cfg.MaxRetries; limit >= 0 && n > limit {
		d.Exhausted = true
	}
	if what == Terminal || d.Exhausted {
		d.Verdict = GiveUp
		return d
	}
	if what != LostProven {
		from := p.brk.state
		if p.brk.failure(now, p.probeJitter()) {
			d.Verdict, d.From, d.At = Opened, from, p.brk.probeAt()
			d.Delay = d.At.Sub(now)
			return d
		}
	}
	step := n
	if what == LostUnproven {
		step++
	}
	d.Verdict = Backoff
	d.Delay = p.cfg.Backoff.Delay(step, p.cfg.Rand())
	d.At = now.Add(d.Delay)
	return d
}

// probeJitter is the random fraction of OpenFor added to a probe's delay;
// none when the schedule has no jitter.
func (p *Policy) probeJitter() float64 {
	if p.cfg.Backoff.jitter() == 0 {
		return 0
	}
	return p.cfg.Rand()
}

// Connected records a successful attempt: the circuit closes. It reports
// the state the circuit was in. The failures stay counted until the
// session proves itself ([Policy.Lost]): a server that crashes right after
// each handshake must still trip the breaker (a crash loop).
func (p *Policy) Connected() (was Circuit) {
	return p.brk.success()
}

// Lost records the end of a session that lived for lived, and reports
// whether it had proven itself: it lived at least the schedule's longest
// delay. A proven session's end forgets the failures before it.
func (p *Policy) Lost(lived time.Duration) (proven bool) {
	if lived < p.cfg.Backoff.Max {
		return false
	}
	p.failures = 0
	p.brk.reset()
	return true
}

// Idle records a session closed for want of use: the schedule starts over
// at the next failure. The breaker keeps what it counted.
func (p *Policy) Idle() {
	p.failures = 0
}

// Reset forgets every failure and closes the circuit (a reconnect asked
// by a person, a login, an enable). It reports the state the circuit was
// in.
func (p *Policy) Reset() (was Circuit) {
	p.failures = 0
	return p.brk.reset()
}
