// Package retry decides when a server's next connection attempt may run:
// the backoff schedule, the circuit breaker and the count of consecutive
// failures with its limit, together one [Policy] per server.
//
// A Policy is pure. It owns no goroutine and no timer and never reads the
// clock: the caller tells it what happened and when (a failed attempt, a
// session that connected or was lost, a reset), and it answers with a
// [Decision] (wait this long, the circuit opened until the probe, or give
// up). Randomness (jitter) comes from the function its [Config] gives, so a
// schedule is reproducible in tests without goroutines or sleeping.
//
// # Concurrency
//
// A Policy is not safe for concurrent use: it belongs to the one goroutine
// that supervises its server, which alone feeds it and asks it. A
// [Schedule] is a value and safe to share.
package retry
