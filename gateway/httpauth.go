package gateway

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peer"
)

// MinTokenBits is the least entropy, in bits, CheckAddr accepts of a
// token that guards an address other than loopback: 32 random bytes.
const MinTokenBits = 256

// TokenError says that an address needs a token.
type TokenError struct{ Addr string }

func (e *TokenError) Error() string {
	return fmt.Sprintf("refusing to serve on %s without a token: it is not a loopback address, so anyone who can reach it could use every server; "+
		"set MCPVISOR_TOKEN or pass --token-file FILE (clients then send \"Authorization: Bearer <token>\"), or bind 127.0.0.1", e.Addr)
}

// WeakTokenError says that a token is too easily guessed to guard an
// address other than loopback.
type WeakTokenError struct {
	Addr string
	Bits int // the token's estimated entropy
}

func (e *WeakTokenError) Error() string {
	return fmt.Sprintf("refusing to serve on %s with this token: it is not a loopback address, and the token looks like about %d bits of entropy "+
		"where at least %d (%d random bytes) are needed to resist guessing; make one with `openssl rand -hex 32 > FILE` and pass --token-file FILE, "+
		"or bind 127.0.0.1", e.Addr, e.Bits, MinTokenBits, MinTokenBits/8)
}

// CheckAddr reports whether Listen would refuse addr with token: addr
// must be host:port, and one that is not loopback needs a token
// (*TokenError) of at least MinTokenBits of entropy (*WeakTokenError).
func CheckAddr(addr, token string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("--http %q: want host:port, e.g. 127.0.0.1:8931", addr)
	}
	if isLoopbackAddr(addr) {
		return nil
	}
	if token == "" {
		return &TokenError{Addr: addr}
	}
	if bits := tokenBits(token); bits < MinTokenBits {
		return &WeakTokenError{Addr: addr, Bits: bits}
	}
	return nil
}

// tokenBits estimates a token's entropy as that of a random string of its
// length over the alphabet its characters suggest (hex digits, letters,
// digits, punctuation), or over only the characters it uses when it uses
// too few of them to be random: "aaaa…" is worth nothing.
func tokenBits(token string) int {
	var digits, lower, upper, other, hexOnly, hexUpper bool
	hexOnly, hexUpper = true, true
	seen := map[rune]bool{}
	n := 0
	for _, r := range token {
		n++
		seen[r] = true
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r >= 'a' && r <= 'z':
			lower = true
			hexUpper = false
			hexOnly = hexOnly && r <= 'f'
		case r >= 'A' && r <= 'Z':
			upper = true
			hexOnly = false
			hexUpper = hexUpper && r <= 'F'
		default:
			other = true
		}
	}
	alphabet := 0
	switch {
	case !lower && !upper && !other:
		alphabet = 10
	case !other && !upper && hexOnly, !other && !lower && hexUpper:
		alphabet = 16
	default:
		for _, c := range []struct {
			used bool
			size int
		}{{digits, 10}, {lower, 26}, {upper, 26}, {other, 33}} {
			if c.used {
				alphabet += c.size
			}
		}
	}
	if 2*len(seen) < min(n, alphabet) {
		alphabet = len(seen) // repetitive: not drawn from the whole alphabet
	}
	if alphabet < 2 {
		return 0
	}
	return int(float64(n) * math.Log2(float64(alphabet)))
}

// authGate requires the bearer token on every request, and slows down and
// logs a peer (an IP address; an IPv6 /64) that keeps sending wrong ones.
type authGate struct {
	token    []byte
	log      *slog.Logger
	guessers peer.Guessers
}

func newAuthGate(token string, log *slog.Logger) *authGate {
	return &authGate{token: []byte(token), log: log}
}

// check lets r through if it carries the token; otherwise it answers 401
// with a Bearer challenge (or 429 to a peer shut out) and closes the
// connection, so that each guess costs a new one.
func (a *authGate) check(w http.ResponseWriter, r *http.Request) bool {
	from := peer.Of(r)
	now := time.Now()
	if wait := a.guessers.ShutOut(from, now); wait > 0 {
		secs := peer.RetryAfter(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("too many wrong bearer tokens from %s: try again in %d s", from, secs), http.StatusTooManyRequests)
		return false
	}
	got, sent := peer.Bearer(r)
	if sent && subtle.ConstantTimeCompare([]byte(got), a.token) == 1 {
		return true
	}
	challenge, msg := `Bearer realm="mcpvisor"`, `missing bearer token: send "Authorization: Bearer <token>"`
	if sent {
		challenge, msg = challenge+`, error="invalid_token"`, "wrong bearer token"
		a.wrong(from, now)
	}
	w.Header().Set("WWW-Authenticate", challenge)
	w.Header().Set("Connection", "close")
	http.Error(w, msg, http.StatusUnauthorized)
	return false
}

// wrong counts a wrong token from peer at now, and logs a peer that is
// shut out for it.
func (a *authGate) wrong(from string, now time.Time) {
	if n, out := a.guessers.Wrong(from, now); out > 0 {
		a.log.Warn("wrong bearer tokens again and again from one address: refusing its requests for a while",
			"peer", from, "wrong_tokens", n, "refused_for", out)
	}
}
