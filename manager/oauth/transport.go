package oauth

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcpvisor/mcpvisor/internal/endpoint"
)

// Transport returns the RoundTripper that sends base's requests to the
// server at serverURL with the server's access token (see the package doc
// for what it does with refusals). Only requests to serverURL's origin
// (scheme, host and port) carry the token: a redirect the http.Client
// follows, or an SSE server's message endpoint, may be anywhere, and the
// token is for this server only. Other requests go through base as they
// are. A serverURL that does not parse matches nothing.
func (s *Source) Transport(serverURL string, base http.RoundTripper) http.RoundTripper {
	t := transport{src: s, base: base}
	if u, err := url.Parse(serverURL); err == nil && u.Host != "" {
		t.scheme, t.host = strings.ToLower(u.Scheme), canonicalHost(u)
	}
	return t
}

type transport struct {
	src  *Source
	base http.RoundTripper
	// scheme and host are the server's origin; empty if it has none.
	scheme, host string
}

// canonicalHost is u's host:port in lower case, without the scheme's
// default port.
func canonicalHost(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" || port == "80" && strings.EqualFold(u.Scheme, "http") || port == "443" && strings.EqualFold(u.Scheme, "https") {
		port = ""
	}
	if port == "" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

// sameOrigin reports whether r goes to the server's origin.
func (t transport) sameOrigin(r *http.Request) bool {
	return t.host != "" && strings.ToLower(r.URL.Scheme) == t.scheme && canonicalHost(r.URL) == t.host
}

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.sameOrigin(r) {
		return t.base.RoundTrip(r)
	}
	access, gen, err := t.src.token(r.Context())
	if err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	if access != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+access)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		challenge := resp.Header.Get("WWW-Authenticate")
		if bearer(challenge) == nil {
			return resp, nil // not OAuth: the caller says what it wants
		}
		discard(resp)
		unauthorized := &endpoint.UnauthorizedError{Challenge: challenge}
		err, handled := t.src.follow(r.Context(), gen, r.URL, unauthorized)
		switch {
		case handled:
		case access == "":
			err = t.src.notLoggedIn(unauthorized)
		default:
			err = t.src.rejected(r.Context(), gen, unauthorized)
		}
		t.src.noteIfLogin(err, resp.StatusCode, challenge, r.URL)
		return nil, err
	case http.StatusForbidden:
		header := resp.Header.Get("WWW-Authenticate")
		c := bearer(header)
		if c == nil || c.Params["error"] != "insufficient_scope" {
			return resp, nil
		}
		discard(resp)
		scopes := strings.Fields(c.Params["scope"])
		if err := t.src.covered(gen, scopes); err != nil {
			return nil, err
		}
		err := t.src.stepUp(scopes)
		t.src.noteIfLogin(err, resp.StatusCode, header, r.URL)
		return nil, err
	}
	if access != "" {
		t.src.accepted(gen)
	}
	return resp, nil
}

// bearer returns the Bearer challenge of a WWW-Authenticate header, or nil.
func bearer(header string) *oauthex.Challenge {
	if header == "" {
		return nil
	}
	cs, err := oauthex.ParseWWWAuthenticate([]string{header})
	if err != nil {
		return nil
	}
	for i := range cs {
		if strings.EqualFold(cs[i].Scheme, "bearer") {
			return &cs[i]
		}
	}
	return nil
}

// discard reads a little of an answer we replace with an error, so that
// its connection can be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
