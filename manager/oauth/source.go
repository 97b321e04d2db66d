package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpvisor/mcpvisor/internal/endpoint"
)

// Source is one server's grant, shared by all its connections: it hands
// out the access token, refreshes it, and says when only a login helps.
// Get it from [Keeper.Source].
type Source struct {
	name   string // as declared, for messages
	key    string // its Store file
	store  *Store
	client *http.Client // for the token endpoint
	now    func() time.Time

	mu sync.Mutex // guards the following
	// cfg is the server's auth declaration, replaced when it changes.
	cfg    Config
	rec    *Record   // as last loaded or saved; nil if none; never edited in place
	loaded bool      // rec was read from the Store
	stamp  fileStamp // of the file rec was read from or written to
	// gen changes whenever the access token does; a request remembers the
	// gen of the token it carried, so that one refusal is answered once.
	gen uint64
	// retried is the gen of a token refreshed because the server refused
	// the one before, until the server takes it: if the server refuses
	// that one too, another refresh would not help (its authorization
	// server changed) and would only loop.
	retried uint64
	// refreshing is open while a refresh is under way; others wait on it.
	refreshing chan struct{}
	// needLogin is closed when only a login helps, and replaced by an
	// open one when a login lands.
	needLogin   chan struct{}
	needClosed  bool
	needMessage *LoginRequiredError // why, while needClosed
}

func newSource(name, key string, store *Store, client *http.Client, cfg Config, now func() time.Time) *Source {
	return &Source{name: name, key: key, store: store, client: client, cfg: cfg, now: now, needLogin: make(chan struct{})}
}

// LoginNeeded returns a channel that is closed once only a login helps the
// server's connections (see the package doc). A connection takes it when
// it starts.
func (s *Source) LoginNeeded() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.needLogin
}

// LoginError is why a login is needed, or nil if none is known to be.
func (s *Source) LoginError() *LoginRequiredError {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.needClosed {
		return nil
	}
	return s.needMessage
}

func (s *Source) setConfig(cfg Config) {
	s.mu.Lock()
	s.cfg = cfg
	s.mu.Unlock()
}

// load reads the Store once.
func (s *Source) load() {
	s.mu.Lock()
	done := s.loaded
	s.mu.Unlock()
	if done {
		return
	}
	st := s.store.stamp(s.key)
	rec, _ := s.store.Load(s.key) // an unreadable file is as good as none: a login replaces it
	s.mu.Lock()
	if !s.loaded {
		s.rec, s.stamp, s.loaded = rec, st, true
		s.gen++
	}
	s.mu.Unlock()
}

// Reload picks up a login made by another process (the login command run
// beside a running host): it reports whether the Store's file changed since this
// Source last read or wrote it and now holds a token. It only looks at the
// file; nothing goes over the network.
func (s *Source) Reload() bool {
	st := s.store.stamp(s.key)
	s.mu.Lock()
	same := st == s.stamp
	s.mu.Unlock()
	if same {
		return false
	}
	rec, err := s.store.Load(s.key)
	if err != nil {
		return false
	}
	s.land(rec, st)
	g := rec.current()
	return g != nil && g.Token.Access != ""
}

// land makes rec (just saved or read) the grant in use: the token is new,
// and whatever needed a login is over. A record whose grant in use is the
// one held already (another process only noted a challenge) changes
// neither.
func (s *Source) land(rec *Record, st fileStamp) {
	s.mu.Lock()
	defer s.mu.Unlock()
	same := s.loaded && sameGrant(s.rec, rec)
	s.rec, s.stamp, s.loaded = rec, st, true
	if same {
		return
	}
	s.gen++
	s.retried = 0
	if s.needClosed {
		s.needLogin, s.needClosed, s.needMessage = make(chan struct{}), false, nil
	}
}

// sameGrant reports whether a and b use the same grant with the same
// tokens.
func sameGrant(a, b *Record) bool {
	ga, gb := a.current(), b.current()
	if ga == nil || gb == nil {
		return ga == nil && gb == nil
	}
	return ga.Issuer == gb.Issuer && ga.Token.Access == gb.Token.Access && ga.Token.Refresh == gb.Token.Refresh
}

// noteIfLogin keeps the server's request for a login, met by a request
// to u, for the next login to follow (see [Record].Challenge), when err
// says that only a login helps. The Store is written only when it is news,
// and over what it holds now (a login made meanwhile by another process
// is kept).
func (s *Source) noteIfLogin(err error, status int, header string, u *url.URL) {
	var login *LoginRequiredError
	if !errors.As(err, &login) {
		return
	}
	c := &Challenge{URL: u.String(), Status: status, Header: header}
	s.Reload()
	s.mu.Lock()
	if s.rec != nil && s.rec.Challenge != nil && *s.rec.Challenge == *c {
		s.mu.Unlock()
		return
	}
	rec := s.rec.clone()
	if rec == nil {
		rec = &Record{Grants: map[string]*Grant{}}
	}
	rec.Challenge = c
	s.rec = rec
	s.mu.Unlock()
	_ = s.save(rec)
}

// challenge is the server's last request for a login to serverURL that no
// login has answered, as this process or another last saw it; nil if none.
func (s *Source) challenge(serverURL string) *Challenge {
	s.load()
	s.Reload()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec == nil || s.rec.Challenge == nil || s.rec.Challenge.URL != serverURL {
		return nil
	}
	return s.rec.Challenge
}

// save writes rec, made from the state at gen, unless a newer state has
// been made meanwhile.
func (s *Source) save(rec *Record) error {
	var err error
	if rec == nil {
		_, err = s.store.Forget(s.key)
	} else {
		err = s.store.Save(s.key, rec)
	}
	st := s.store.stamp(s.key)
	s.mu.Lock()
	if s.rec == rec {
		s.stamp = st
	}
	s.mu.Unlock()
	return err
}

// requireLoginLocked records that only a login helps, for reason, and
// returns the error that says so.
func (s *Source) requireLoginLocked(reason string, scopes []string, unauthorized *endpoint.UnauthorizedError) *LoginRequiredError {
	e := &LoginRequiredError{Server: s.name, Reason: reason, Scopes: scopes, Unauthorized: unauthorized}
	if !s.needClosed {
		close(s.needLogin)
		s.needClosed = true
	}
	s.needMessage = e
	return e
}

// token returns the access token to send and its gen; "" when there is
// none (the request goes without, and a protected server says so). A
// token due for refresh is refreshed first.
func (s *Source) token(ctx context.Context) (string, uint64, error) {
	s.load()
	for {
		s.mu.Lock()
		g := s.rec.current()
		if g == nil || g.Token.Access == "" {
			gen := s.gen
			s.mu.Unlock()
			return "", gen, nil
		}
		now := s.now()
		expired := !g.Token.Expiry.IsZero() && !now.Before(g.Token.Expiry)
		if !now.Before(refreshAt(g.Token)) && g.Token.Refresh != "" {
			if wait := s.refreshing; wait != nil {
				s.mu.Unlock()
				select {
				case <-wait:
					continue
				case <-ctx.Done():
					return "", 0, ctx.Err()
				}
			}
			old, gen := g.Token.Access, s.gen
			s.mu.Unlock()
			err := s.refresh(ctx, gen, false)
			if err == nil {
				continue
			}
			if login := (*LoginRequiredError)(nil); errors.As(err, &login) || expired {
				return "", 0, err
			}
			return old, gen, nil // not expired yet: the next request tries again
		}
		access, gen := g.Token.Access, s.gen
		s.mu.Unlock()
		if expired {
			return "", gen, nil // cannot be refreshed: the server will ask for a login
		}
		return access, gen, nil
	}
}

// refreshAt is when a token is refreshed without anyone asking: a tenth of
// its lifetime before it expires, at least 10 seconds and at most 5
// minutes before, but never in the first half of its life. A token with
// no expiry is never refreshed early.
func refreshAt(t Token) time.Time {
	if t.Expiry.IsZero() {
		return time.Time{}.AddDate(9999, 0, 0)
	}
	life := t.Expiry.Sub(t.IssuedAt)
	if t.IssuedAt.IsZero() || life <= 0 {
		return t.Expiry.Add(-10 * time.Second)
	}
	margin := min(max(life/10, 10*time.Second), 5*time.Minute, life/2)
	return t.Expiry.Add(-margin)
}

// rejected answers a 401 for the token of gen: one silent refresh, unless
// the token was already replaced (the next request carries the new one) or
// was itself the outcome of such a refresh.
func (s *Source) rejected(ctx context.Context, gen uint64, unauthorized *endpoint.UnauthorizedError) error {
	for {
		s.mu.Lock()
		if s.gen != gen {
			s.mu.Unlock()
			return &TokenRefreshedError{Server: s.name}
		}
		if wait := s.refreshing; wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		g := s.rec.current()
		if g == nil || g.Token.Refresh == "" || s.retried == gen {
			reason := "the server refused the access token"
			if s.retried == gen {
				reason = "the server refused even a freshly refreshed access token (its authorization server may have changed)"
			}
			rec := s.dropAccessLocked()
			e := s.requireLoginLocked(reason, nil, unauthorized)
			s.mu.Unlock()
			_ = s.save(rec)
			return e
		}
		s.mu.Unlock()
		if err := s.refresh(ctx, gen, true); err != nil {
			return err
		}
		return &TokenRefreshedError{Server: s.name}
	}
}

// accepted records that the server took the token of gen: should it
// refuse it later, a refresh may help again.
func (s *Source) accepted(gen uint64) {
	s.mu.Lock()
	if s.retried == gen {
		s.retried = 0
	}
	s.mu.Unlock()
}

// dropAccessLocked forgets the current access token, which the server no
// longer takes, and returns the record to save.
func (s *Source) dropAccessLocked() *Record {
	rec := s.rec.clone()
	if g := rec.current(); g != nil {
		g.Token.Access, g.Token.Expiry = "", time.Time{}
	}
	s.rec = rec
	s.gen++
	return rec
}

// stepUp records the scopes a 403 insufficient_scope asked for, for the
// next login, which is the only way to get them.
func (s *Source) stepUp(scopes []string) error {
	s.mu.Lock()
	rec := s.rec.clone()
	if g := rec.current(); g != nil {
		g.Pending = union(g.Pending, scopes)
		s.rec = rec
	}
	reason := "the request needs more authorization than the login gave"
	if len(scopes) > 0 {
		reason = fmt.Sprintf("the request needs scopes %q, which the login did not grant", strings.Join(scopes, " "))
	}
	e := s.requireLoginLocked(reason, scopes, nil)
	s.mu.Unlock()
	if rec != nil {
		_ = s.save(rec)
	}
	return e
}

// notLoggedIn answers a 401 to a request that carried no token.
func (s *Source) notLoggedIn(unauthorized *endpoint.UnauthorizedError) error {
	s.mu.Lock()
	reason := "not logged in"
	if g := s.rec.current(); g != nil {
		reason = "the login has expired"
	}
	if s.needClosed && s.needMessage != nil && s.needMessage.Unauthorized == nil {
		reason = s.needMessage.Reason // a refused refresh or a step-up says more
	}
	e := s.requireLoginLocked(reason, nil, unauthorized)
	s.mu.Unlock()
	return e
}

// refreshTimeout bounds one refresh.
const refreshTimeout = 30 * time.Second

// refresh trades the refresh token of gen for new tokens, single-flight.
// forced marks a refresh because the server refused the token. A refusal
// by the authorization server forgets the tokens (retrying it would be
// refused again) and needs a login; any other failure keeps them.
//
// The exchange does not end with ctx: an authorization server that
// rotates refresh tokens has retired the old one once it answers, so the
// answer must be kept even if the request that asked for it is gone. It
// runs in a goroutine of its own, bounded by refreshTimeout, that saves
// what it gets and closes s.refreshing; refresh returns ctx's error
// without waiting for it.
func (s *Source) refresh(ctx context.Context, gen uint64, forced bool) error {
	s.mu.Lock()
	if s.gen != gen || s.refreshing != nil {
		s.mu.Unlock()
		return nil // someone else changed it: look again
	}
	g := s.rec.current()
	if g == nil {
		s.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	s.refreshing = done
	cfg := s.oauthConfigLocked(g)
	refreshToken := g.Token.Refresh
	s.mu.Unlock()

	result := make(chan error, 1)
	go func() {
		result <- s.exchange(context.WithoutCancel(ctx), gen, forced, cfg, refreshToken, done)
	}()
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exchange is the refresh of gen's refreshToken at cfg's token endpoint;
// it closes done once the outcome is in s.
func (s *Source) exchange(ctx context.Context, gen uint64, forced bool, cfg *oauth2.Config, refreshToken string, done chan struct{}) error {
	tctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, s.client), refreshTimeout)
	defer cancel()
	tok, err := cfg.TokenSource(tctx, &oauth2.Token{RefreshToken: refreshToken, Expiry: time.Unix(1, 0)}).Token()

	s.mu.Lock()
	s.refreshing = nil
	close(done)
	if s.gen != gen { // a login landed meanwhile: it wins
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		desc, refused := refusal(err)
		if !refused {
			s.mu.Unlock()
			if desc == "" {
				desc = redactURL(err).Error()
			}
			return fmt.Errorf("refreshing the access token (the login is kept; try again later): %s", desc)
		}
		rec := s.rec.clone()
		rg := rec.current()
		rg.Token = Token{}
		s.rec = rec
		s.gen++
		e := s.requireLoginLocked(fmt.Sprintf("the authorization server refused to refresh the access token (%s)", desc), nil, nil)
		s.mu.Unlock()
		_ = s.save(rec)
		return e
	}
	rec := s.rec.clone()
	rg := rec.current()
	next := fromOAuth2(tok, s.now())
	if next.Refresh == "" {
		next.Refresh = refreshToken // not rotated: the old one still works
	}
	rg.Token = next
	s.rec = rec
	s.gen++
	if forced {
		s.retried = s.gen
	}
	s.mu.Unlock()
	return s.save(rec)
}

// oauthConfigLocked is the client of g as golang.org/x/oauth2 wants it.
func (s *Source) oauthConfigLocked(g *Grant) *oauth2.Config {
	secret := g.ClientSecret
	if !g.Registered && g.ClientID == s.cfg.ClientID {
		secret = s.cfg.ClientSecret
	}
	return &oauth2.Config{
		ClientID:     g.ClientID,
		ClientSecret: secret,
		Endpoint:     oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)},
		Scopes:       g.Scopes,
	}
}

// forget drops the grants (logout): the connections need a login.
func (s *Source) forget() error {
	s.mu.Lock()
	s.rec, s.loaded = nil, true
	s.gen++
	s.requireLoginLocked("logged out", nil, nil)
	s.mu.Unlock()
	return s.save(nil)
}

func fromOAuth2(t *oauth2.Token, now time.Time) Token {
	return Token{Access: t.AccessToken, Type: t.TokenType, Refresh: t.RefreshToken, Expiry: t.Expiry, IssuedAt: now}
}

// union is a followed by what b adds, without repeats.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
