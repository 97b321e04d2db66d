package oauth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// callbackPath is where the authorization server sends the browser back.
const callbackPath = "/callback"

// callback is the loopback listener that receives the redirect of one
// login. Its server goroutine is stopped and waited for by close.
type callback struct {
	srv     *http.Server
	url     string // the redirect URI
	results chan callbackResult
	done    chan struct{} // closed when Serve has returned

	mu sync.Mutex // guards the following
	// state is the state parameter of the authorization request under
	// way; a redirect without it is not this login's. Empty until set.
	state string
}

type callbackResult struct {
	res *auth.AuthorizationResult
	err error
}

// listen starts the listener on 127.0.0.1:port (any free port if 0).
func listen(port int) (*callback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listening for the login's redirect: %w", err)
	}
	cb := &callback{
		url:     "http://" + ln.Addr().String() + callbackPath,
		results: make(chan callbackResult, 1),
		done:    make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc(callbackPath, cb.serve)
	cb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(cb.done)
		_ = cb.srv.Serve(ln)
	}()
	return cb, nil
}

// expect sets the state of the authorization request under way, from
// its URL; it reports whether the URL has one.
func (cb *callback) expect(authURL string) bool {
	u, err := url.Parse(authURL)
	if err != nil {
		return false
	}
	state := u.Query().Get("state")
	cb.mu.Lock()
	cb.state = state
	cb.mu.Unlock()
	return state != ""
}

// serve takes the first redirect that carries the state of the request
// under way; later ones (a reload of the page) are told the login is
// over. A redirect with another state, or none, is not this login's
// (any page in the browser may send one to a loopback port) and is
// answered 400 without ending the login.
func (cb *callback) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cb.mu.Lock()
	state := cb.state
	cb.mu.Unlock()
	if state == "" || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
		http.Error(w, "this redirect is not for the login under way", http.StatusBadRequest)
		return
	}
	var res callbackResult
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		res.err = fmt.Errorf("the authorization server refused the login (%s)", msg)
	} else if q.Get("code") == "" {
		http.Error(w, "no authorization code in this request", http.StatusBadRequest)
		return
	} else {
		res.res = &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
	}
	select {
	case cb.results <- res:
	default:
		http.Error(w, "this login is already over", http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	title := "Logged in"
	body := "mcpvisor has what it needs. You can close this window."
	if res.err != nil {
		title, body = "Login failed", res.err.Error()
	}
	fmt.Fprintf(w, "<!doctype html><title>%s</title><h1>%s</h1><p>%s</p>\n", title, title, html.EscapeString(body))
}

// wait returns the redirect's result, or ctx's error.
func (cb *callback) wait(ctx context.Context) (*auth.AuthorizationResult, error) {
	select {
	case r := <-cb.results:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("no redirect from the browser: %w", context.Cause(ctx))
	}
}

// close stops the listener and waits for it.
func (cb *callback) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := cb.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = cb.srv.Close()
	}
	<-cb.done
}
