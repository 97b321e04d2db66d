package oauth

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/oauth2"

	"github.com/mcpvisor/mcpvisor/internal/endpoint"
)

// LoginRequiredError is a request the server refused for want of a login:
// there is no token, the authorization server refused to refresh it, the
// server refused even a fresh one, or the request needs more scopes. Only
// a login helps; retrying would only hammer the servers. Its message says
// why, not how to log in: that is each face's to word (a Lua call, a
// command line).
type LoginRequiredError struct {
	Server string
	Reason string   // why, in a few words, with no secret in it
	Scopes []string // scopes the server asked for (step-up), if any
	// Unauthorized is the 401 that said so, if one did (not for a step-up
	// or a refused refresh): errors.As finds it through this error.
	Unauthorized *endpoint.UnauthorizedError
}

func (e *LoginRequiredError) Error() string { return e.Reason }

func (e *LoginRequiredError) Unwrap() error {
	if e.Unauthorized == nil {
		return nil
	}
	return e.Unauthorized
}

// Is makes errors.Is(err, endpoint.ErrUnauthorized) hold, with or
// without a 401 behind it: only a login helps.
func (e *LoginRequiredError) Is(target error) bool { return target == endpoint.ErrUnauthorized }

// Challenge is the WWW-Authenticate header of the refusal, if any.
func (e *LoginRequiredError) Challenge() string {
	if e.Unauthorized == nil {
		return ""
	}
	return e.Unauthorized.Challenge
}

// TokenRefreshedError is a request the server refused although a token
// it takes was to be had without the user: a refresh of one it no longer
// took, the grant the host holds for the authorization server the server
// moved to (Issuer), or a login made meanwhile that grants the scopes the
// request needed (Scopes). The request is not sent again here: it may have
// been a tool call, which the caller decides whether to repeat.
type TokenRefreshedError struct {
	Server string
	Issuer string   // the authorization server switched to, if that was it
	Scopes []string // the scopes the request needed, if a step-up was met
}

func (e *TokenRefreshedError) Error() string {
	switch {
	case e.Issuer != "":
		return fmt.Sprintf("the server moved to authorization server %s; the login kept for it is used from now on, but the request was not sent again: repeat it", e.Issuer)
	case len(e.Scopes) > 0:
		return fmt.Sprintf("the request needed scopes %q, which a newer login grants; it is used from now on, but the request was not sent again: repeat it", strings.Join(e.Scopes, " "))
	}
	return "the server refused the access token; a new one was obtained, but the request was not sent again: repeat it"
}

// ErrNotProtected is in the chain of a login to a server that does not ask
// for authorization.
var ErrNotProtected = errors.New("the server does not ask for authorization")

// refusal reports whether err is the authorization server refusing a
// grant for good: invalid_grant (the refresh token or code is dead),
// invalid_client or unauthorized_client (the client may not use it). Any
// other failure (a 429, a 408, a 404, a 5xx, a request it could not read,
// not being reached) may pass, and keeps the grant. desc says what went
// wrong without the response body, which is not ours to show.
func refusal(err error) (desc string, refused bool) {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		return "", false
	}
	desc = describe(re)
	if re.Response != nil && re.Response.StatusCode >= 500 {
		return desc, false
	}
	switch re.ErrorCode {
	case "invalid_grant", "invalid_client", "unauthorized_client":
		return desc, true
	}
	return desc, false
}

// describe is a token endpoint's error as we show it: the status, the
// error code and its description, without the body (which may echo
// anything, secrets included).
func describe(re *oauth2.RetrieveError) string {
	status := ""
	if re.Response != nil {
		status = re.Response.Status
	}
	desc := re.ErrorCode
	if desc == "" {
		desc, status = status, ""
	}
	if re.ErrorDescription != "" {
		desc += ": " + re.ErrorDescription
	}
	if status != "" {
		desc += " (" + status + ")"
	}
	if desc == "" {
		desc = "the token endpoint refused the request"
	}
	return desc
}
