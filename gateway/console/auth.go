package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/peer"
)

// cookieName is the console's session cookie.
const cookieName = "mcpvisor_console"

// session is a visitor's session, read from its cookie or its bearer
// token.
type session struct {
	id       string
	loggedIn bool // the cookie was set by a login with a token
	bearer   bool // the request carried the token itself: no CSRF to check
	act      bool // it may act, not only view
	csrf     string
}

// What a session's cookie says its login was.
const (
	levelNone byte = 0 // no login: a console without a token
	levelAct  byte = 1 // logged in with the token
	levelView byte = 2 // logged in with the view token: may only look
)

// formCSRF is the CSRF token of s's action forms; "" for a session that
// may only view, which is then shown none.
func (s session) formCSRF() string {
	if !s.act {
		return ""
	}
	return s.csrf
}

// auth checks visitors: their login cookies, bearer tokens and CSRF
// tokens, and counts wrong logins.
type auth struct {
	token []byte // nil: no token, everyone may act
	view  []byte // nil: no view token; else a token that may only view
	key   []byte // signs cookies; made with the console
	now   func() time.Time
	log   *slog.Logger

	guessers peer.Guessers // wrong logins, by peer
}

func newAuth(token, view string, now func() time.Time, log *slog.Logger) *auth {
	a := &auth{key: make([]byte, 32), now: now, log: log}
	if token != "" {
		a.token = []byte(token)
		if view != "" && view != token {
			a.view = []byte(view)
		}
	}
	_, _ = rand.Read(a.key)
	return a
}

// open reports whether no token is needed.
func (a *auth) open() bool { return a.token == nil }

// visitor is r's session, and whether it may see the console: with no
// token anyone may (a session cookie is issued on the way, for the CSRF
// token of its forms); with one, a request carrying it as a bearer token
// or a cookie from a login may. A wrong bearer token counts as a wrong
// login, and the bearer token of a peer shut out is not looked at.
func (a *auth) visitor(w http.ResponseWriter, r *http.Request) (session, bool) {
	if a.token != nil {
		if got, ok := peer.Bearer(r); ok && a.shutOut(r) == 0 {
			if level := a.level(got); level != levelNone {
				return session{bearer: true, act: level == levelAct}, true
			}
			a.guessed(r)
		}
	}
	if s, ok := a.cookie(r); ok && (s.loggedIn || a.open()) {
		return s, true
	}
	if !a.open() {
		return session{}, false
	}
	return a.issue(w, r, levelNone), true
}

// level is what got lets its holder do: levelAct for the token,
// levelView for the view token, levelNone for anything else. Both are
// compared in constant time.
func (a *auth) level(got string) byte {
	act := subtle.ConstantTimeCompare([]byte(got), a.token) == 1
	view := a.view != nil && subtle.ConstantTimeCompare([]byte(got), a.view) == 1
	switch {
	case act:
		return levelAct
	case view:
		return levelView
	}
	return levelNone
}

// issue sets a new session cookie on w and returns its session.
func (a *auth) issue(w http.ResponseWriter, r *http.Request, level byte) session {
	var raw [25]byte
	_, _ = rand.Read(raw[:16])
	binary.BigEndian.PutUint64(raw[16:24], uint64(a.now().Unix()))
	raw[24] = level
	body := base64.RawURLEncoding.EncodeToString(raw[:])
	value := body + "." + base64.RawURLEncoding.EncodeToString(a.mac("cookie", body))
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/ui", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(SessionTTL / time.Second)})
	return a.session(body, level)
}

// cookie is the session r's cookie holds, if it is one this console
// signed and it has not expired.
func (a *auth) cookie(r *http.Request) (session, bool) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return session{}, false
	}
	body, sig, ok := strings.Cut(ck.Value, ".")
	if !ok {
		return session{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, a.mac("cookie", body)) {
		return session{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) != 25 {
		return session{}, false
	}
	issued := time.Unix(int64(binary.BigEndian.Uint64(raw[16:24])), 0)
	if a.now().Sub(issued) > SessionTTL {
		return session{}, false
	}
	return a.session(body, raw[24]), true
}

func (a *auth) session(id string, level byte) session {
	return session{id: id, loggedIn: level != levelNone, act: level == levelAct || a.open(),
		csrf: base64.RawURLEncoding.EncodeToString(a.mac("csrf", id))}
}

// mac signs what with the console's key, for purpose.
func (a *auth) mac(purpose, what string) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(purpose + "\x00" + what))
	return m.Sum(nil)
}

// csrfOK reports whether r, an action of s, carries s's CSRF token.
func (a *auth) csrfOK(r *http.Request, s session) bool {
	if s.bearer {
		return true // a browser never adds a bearer token by itself
	}
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf)) == 1
}

// shutOut is how long r's peer may not try a token yet.
func (a *auth) shutOut(r *http.Request) time.Duration {
	return a.guessers.ShutOut(peer.Of(r), a.now())
}

// guessed counts a wrong token from r's peer.
func (a *auth) guessed(r *http.Request) {
	from := peer.Of(r)
	if n, out := a.guessers.Wrong(from, a.now()); out > 0 {
		a.log.Warn("wrong console tokens again and again from one address: refusing its logins for a while",
			"peer", from, "wrong_tokens", n, "refused_for", out)
	}
}
