package peer

import (
	"math"
	"sync"
	"time"
)

// What slows a peer that keeps sending wrong tokens: after FreeGuesses,
// each further wrong one shuts it out for twice as long as the last (1 s,
// 2 s, …, up to MaxShutOut). A peer is forgotten after forgetGuesser
// without a wrong token; at most maxGuessers are remembered, so a flood of
// addresses costs bounded memory.
const (
	FreeGuesses   = 5
	MaxShutOut    = 30 * time.Second
	forgetGuesser = 15 * time.Minute
	maxGuessers   = 4096
)

// Guessers counts the wrong tokens of each peer (as Of names them) and
// says which are shut out. The zero value is ready to use; it is safe for
// concurrent use.
type Guessers struct {
	mu sync.Mutex
	// mu guards peers.
	peers map[string]*guesser
}

// guesser is what is remembered of a peer that sent wrong tokens.
type guesser struct {
	wrong int       // wrong tokens since it was last forgotten
	last  time.Time // the last one
	until time.Time // shut out until then
}

// ShutOut is how long peer is still shut out at now: while it is, its
// tokens are not to be looked at.
func (g *Guessers) ShutOut(peer string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if p := g.peers[peer]; p != nil && p.until.After(now) {
		return p.until.Sub(now)
	}
	return 0
}

// Wrong counts a wrong token from peer at now. It returns how many the
// peer has sent and, once that is over FreeGuesses, how long it is now
// shut out for (0 before).
func (g *Guessers) Wrong(peer string, now time.Time) (wrong int, shutOut time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.peers[peer]
	if p == nil {
		g.makeRoomLocked(now)
		p = &guesser{}
		g.peers[peer] = p
	}
	if now.Sub(p.last) > forgetGuesser {
		p.wrong = 0
	}
	p.wrong++
	p.last = now
	if over := p.wrong - FreeGuesses; over > 0 {
		shutOut = min(time.Second<<min(over-1, 6), MaxShutOut)
		p.until = now.Add(shutOut)
	}
	return p.wrong, shutOut
}

// makeRoomLocked forgets the peers not heard from for forgetGuesser, and
// the longest silent one if the table is still full.
func (g *Guessers) makeRoomLocked(now time.Time) {
	if g.peers == nil {
		g.peers = map[string]*guesser{}
	}
	if len(g.peers) < maxGuessers {
		return
	}
	var oldest string
	for name, p := range g.peers {
		if now.Sub(p.last) > forgetGuesser {
			delete(g.peers, name)
		} else if oldest == "" || p.last.Before(g.peers[oldest].last) {
			oldest = name
		}
	}
	if len(g.peers) >= maxGuessers {
		delete(g.peers, oldest)
	}
}

// RetryAfter is wait in whole seconds, rounded up, as a Retry-After
// header and a "try again in N s" say it: a peer told to wait that long
// is no longer shut out when it tries again.
func RetryAfter(wait time.Duration) int {
	return int(math.Ceil(wait.Seconds()))
}
