package manager

import (
	"math"
	"time"
)

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
