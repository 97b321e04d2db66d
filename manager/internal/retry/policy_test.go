package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const ms = time.Millisecond

// t0 is an arbitrary start: the policy never reads the clock.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// defaults are the manager's defaults with jitter off unless a test
// turns it on.
func defaults() Config {
	return Config{
		Backoff:    Schedule{Initial: 100 * ms, Max: 3 * time.Second, Multiplier: 2},
		Breaker:    BreakerConfig{Failures: 5, Window: 2 * time.Minute, OpenFor: 30 * time.Second},
		MaxRetries: -1,
		Rand:       func() float64 { return 0 },
	}
}

// fail records failures of what at the times given (offsets from t0) and
// returns the decisions.
func fail(p *Policy, what Failure, at ...time.Duration) []Decision {
	var out []Decision
	for _, d := range at {
		out = append(out, p.Failed(t0.Add(d), what))
	}
	return out
}

// With the defaults, five failed attempts in quick succession back off
// 100, 200, 400, 800 ms, and the fifth opens the circuit for 30s.
func TestPolicySchedule(t *testing.T) {
	p := New(defaults())
	ds := fail(p, Attempt, 0, 100*ms, 300*ms, 700*ms, 1500*ms)
	for i, want := range []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms} {
		require.Equal(t, Backoff, ds[i].Verdict, "failure %d", i+1)
		require.Equal(t, want, ds[i].Delay, "failure %d", i+1)
		require.Equal(t, i+1, ds[i].Failures)
	}
	opened := ds[4]
	require.Equal(t, Decision{Verdict: Opened, Failures: 5, Delay: 30 * time.Second, At: t0.Add(31500 * ms), From: Closed}, opened)
	require.Equal(t, Open, p.Circuit())
	require.Equal(t, t0.Add(31500*ms), p.ProbeAt())
}

// A failed probe reopens the circuit with the timer restarted; a
// successful one closes it.
func TestPolicyProbe(t *testing.T) {
	p := New(defaults())
	fail(p, Attempt, 0, 1, 2, 3, 4)
	require.Equal(t, Open, p.Circuit())
	require.True(t, p.Probe())
	require.Equal(t, HalfOpen, p.Circuit())
	require.False(t, p.Probe(), "only an open circuit lets a probe through")

	d := p.Failed(t0.Add(30*time.Second), Attempt)
	require.Equal(t, Opened, d.Verdict, "one failed probe is enough")
	require.Equal(t, HalfOpen, d.From)
	require.Equal(t, t0.Add(60*time.Second), d.At)

	require.True(t, p.Probe())
	require.Equal(t, HalfOpen, p.Connected())
	require.Equal(t, Closed, p.Circuit())
}

// Failures further apart than the window never open the circuit; a
// disabled breaker never opens whatever the pace.
func TestPolicyBreakerWindow(t *testing.T) {
	cfg := defaults()
	cfg.Breaker.Window = time.Second
	p := New(cfg)
	for _, d := range fail(p, Attempt, 0, 300*ms, 600*ms, 900*ms, 1200*ms) {
		require.Equal(t, Backoff, d.Verdict, "five within 1.2s")
	}
	require.Equal(t, Opened, p.Failed(t0.Add(1250*ms), Attempt).Verdict, "the last five within 950ms")

	cfg.Breaker.Disabled = true
	p = New(cfg)
	for _, d := range fail(p, Attempt, 0, 1, 2, 3, 4, 5, 6, 7) {
		require.Equal(t, Backoff, d.Verdict)
	}
}

// A session lost before it proved itself is a failed attempt for the
// breaker and waits one step longer; a connection in between keeps the
// count, so a crash loop trips the breaker. A proven session's loss
// starts the schedule afresh and is not counted by the breaker.
func TestPolicyLostSessions(t *testing.T) {
	p := New(defaults())
	for i := range 4 {
		p.Connected()
		require.False(t, p.Lost(time.Second), "lived less than the longest delay")
		d := p.Failed(t0.Add(time.Duration(i)*time.Second), LostUnproven)
		require.Equal(t, Backoff, d.Verdict)
		require.Equal(t, i+1, d.Failures)
		require.Equal(t, (100*ms)<<(i+1), d.Delay, "one step further on than a refused attempt")
	}
	p.Connected()
	p.Lost(time.Second)
	require.Equal(t, Opened, p.Failed(t0.Add(4*time.Second), LostUnproven).Verdict, "a crash loop trips the breaker")

	p = New(defaults())
	fail(p, Attempt, 0, 1, 2, 3)
	p.Connected()
	require.True(t, p.Lost(3*time.Second))
	require.Zero(t, p.Failures(), "a proven session forgets the failures before it")
	for i := range 10 {
		d := p.Failed(t0.Add(time.Duration(i)), LostProven)
		require.Equal(t, Backoff, d.Verdict, "never opens the circuit")
	}
}

// MaxRetries 2 gives up at the third failure; a terminal failure gives up
// at once, saying whether the limit was reached too.
func TestPolicyGivesUp(t *testing.T) {
	cfg := defaults()
	cfg.MaxRetries = 2
	p := New(cfg)
	ds := fail(p, Attempt, 0, 1, 2)
	require.Equal(t, Backoff, ds[1].Verdict)
	require.Equal(t, Decision{Verdict: GiveUp, Failures: 3, Exhausted: true}, ds[2])

	require.Equal(t, Closed, p.Reset())
	require.Equal(t, Decision{Verdict: GiveUp, Failures: 1}, p.Failed(t0, Terminal))
	fail(p, Attempt, 1)
	require.Equal(t, Decision{Verdict: GiveUp, Failures: 3, Exhausted: true}, p.Failed(t0, Terminal))
}

// Reset forgets the failures and closes the circuit; an idle close
// restarts the schedule but the breaker keeps its count.
func TestPolicyResetAndIdle(t *testing.T) {
	p := New(defaults())
	fail(p, Attempt, 0, 1, 2, 3, 4)
	require.Equal(t, Open, p.Reset())
	require.Zero(t, p.Failures())
	require.Equal(t, 100*ms, p.Failed(t0.Add(5), Attempt).Delay)

	p = New(defaults())
	fail(p, Attempt, 0, 1, 2, 3)
	p.Connected()
	p.Idle()
	d := p.Failed(t0.Add(4), Attempt)
	require.Equal(t, 1, d.Failures, "the schedule starts over")
	require.Equal(t, Opened, d.Verdict, "the breaker still counts the four before")
}

// Jitter comes from Rand: the probe is delayed by a fraction of OpenFor,
// the backoff by a fraction of the delay; without jitter the probe draws
// nothing.
func TestPolicyJitter(t *testing.T) {
	cfg := defaults()
	cfg.Backoff.Jitter = 0.25
	draws := 0
	cfg.Rand = func() float64 { draws++; return 0.5 }
	p := New(cfg)
	d := p.Failed(t0, Attempt)
	require.Equal(t, 2, draws, "one for the probe, one for the delay")
	require.Equal(t, 112500*time.Microsecond, d.Delay)
	fail(p, Attempt, 1, 2, 3)
	d = p.Failed(t0.Add(4), Attempt)
	require.Equal(t, Opened, d.Verdict)
	require.Equal(t, t0.Add(4).Add(45*time.Second), d.At, "OpenFor plus half of it")

	cfg.Backoff.Jitter = 0
	draws = 0
	p = New(cfg)
	p.Failed(t0, Attempt)
	require.Equal(t, 1, draws, "no jitter: only the delay draws (and ignores it)")
}

// Delay caps before adding jitter and never overflows for large n.
func TestScheduleDelay(t *testing.T) {
	s := Schedule{Initial: 100 * ms, Max: 3 * time.Second, Multiplier: 2, Jitter: 0.25}
	require.Equal(t, 100*ms, s.Delay(0, 0), "n < 1 counts as the first failure")
	require.Equal(t, 3750*ms, s.Delay(6, 1))
	require.Equal(t, 3*time.Second, s.Delay(10_000, 0))
	s.Jitter = -1
	require.Equal(t, 200*ms, s.Delay(2, 1), "no jitter ignores r")
}
