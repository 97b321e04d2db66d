package retry

import (
	"math"
	"time"
)

// Schedule is the backoff schedule: how long to wait after each of a
// run of consecutive failures.
type Schedule struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	// Jitter is the fraction of a delay added at random; zero or less
	// adds none.
	Jitter float64
}

// Delay returns how long to wait after the n-th consecutive failure (n ≥ 1):
//
//	min(Initial · Multiplier^(n−1), Max) + Jitter · that · r
//
// where r is uniform in [0, 1) and supplied by the caller.
func (s Schedule) Delay(n int, r float64) time.Duration {
	if n < 1 {
		n = 1
	}
	base := float64(s.Initial) * math.Pow(s.Multiplier, float64(n-1))
	if base > float64(s.Max) || math.IsInf(base, 0) || math.IsNaN(base) {
		base = float64(s.Max)
	}
	return time.Duration(base + s.jitter()*base*r)
}

func (s Schedule) jitter() float64 {
	return max(s.Jitter, 0)
}
