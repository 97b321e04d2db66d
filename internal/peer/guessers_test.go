package peer_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/internal/peer"
)

// A peer's first wrong tokens are free; each further one shuts it out
// twice as long as the last, up to a cap; another peer is not affected.
func TestGuessersShutOutDoubles(t *testing.T) {
	var g peer.Guessers
	now := time.Unix(1_000_000, 0)
	for i := range peer.FreeGuesses {
		n, out := g.Wrong("a", now)
		assert.Equal(t, i+1, n)
		assert.Zero(t, out, "guess %d is free", i+1)
	}
	for _, want := range []time.Duration{1, 2, 4, 8, 16, 30, 30} {
		_, out := g.Wrong("a", now)
		assert.Equal(t, want*time.Second, out)
		assert.Equal(t, want*time.Second, g.ShutOut("a", now))
		assert.Equal(t, time.Duration(0), g.ShutOut("a", now.Add(want*time.Second)), "over once its time is up")
	}
	assert.Zero(t, g.ShutOut("b", now))
}

// A peer quiet for a quarter of an hour starts again with free guesses,
// and a flood of peers does not grow the table without bound.
func TestGuessersForget(t *testing.T) {
	var g peer.Guessers
	now := time.Unix(1_000_000, 0)
	for range peer.FreeGuesses + 1 {
		g.Wrong("a", now)
	}
	n, out := g.Wrong("a", now.Add(16*time.Minute))
	assert.Equal(t, 1, n)
	assert.Zero(t, out)

	for i := range 5000 {
		g.Wrong(fmt.Sprint("flood-", i), now.Add(17*time.Minute))
	}
	n, _ = g.Wrong("a", now.Add(17*time.Minute))
	assert.Equal(t, 1, n, "the oldest peer made room for the flood")
}

// On the clock: a peer shut out is told to wait no less than it must,
// and is let back in the moment its time is up, not before.
func TestGuessersShutOutEndsOnTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g peer.Guessers
		for range peer.FreeGuesses + 1 {
			g.Wrong("a", time.Now())
		}
		wait := g.ShutOut("a", time.Now())
		assert.Equal(t, time.Second, wait)
		assert.Equal(t, 1, peer.RetryAfter(wait))
		time.Sleep(wait - time.Millisecond)
		assert.Equal(t, time.Millisecond, g.ShutOut("a", time.Now()))
		assert.Equal(t, 1, peer.RetryAfter(g.ShutOut("a", time.Now())), "rounded up: never told to come back too soon")
		time.Sleep(time.Millisecond)
		assert.Zero(t, g.ShutOut("a", time.Now()))

		_, out := g.Wrong("a", time.Now())
		assert.Equal(t, 2*time.Second, out, "the next wrong one doubles it")
		assert.Equal(t, 2, peer.RetryAfter(g.ShutOut("a", time.Now())))
	})
}
