package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server may ask for a login on any request: the first, or only when
// its tools are listed or one of them is called. A login follows what the
// server last asked (kept in the Store by whichever process met it), and
// only when nothing was kept does it ask the server itself, going as far
// into a session as it takes to be challenged.

// challenged returns a request to the server and the refusal that asked
// for a login, for the go-sdk's handler to follow: the one recorded, else
// a probe's.
func (k *Keeper) challenged(ctx context.Context, req LoginRequest, recorded *Challenge) (*http.Request, *http.Response, error) {
	if recorded != nil {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, recorded.URL, nil)
		if err != nil {
			return nil, nil, err
		}
		resp := &http.Response{
			StatusCode: recorded.Status,
			Status:     fmt.Sprintf("%d %s", recorded.Status, http.StatusText(recorded.Status)),
			Header:     http.Header{"Www-Authenticate": {recorded.Header}},
			Body:       http.NoBody,
			Request:    r,
		}
		return r, resp, nil
	}
	r, resp, err := k.probe(ctx, req)
	if errors.Is(err, ErrNotProtected) && !req.SSE {
		return k.probeSession(ctx, req)
	}
	return r, resp, err
}

// probeSession opens an MCP session without a token and lists what the
// server offers, until a request is refused with a Bearer challenge: a
// 401, or a 403 insufficient_scope.
func (k *Keeper) probeSession(ctx context.Context, req LoginRequest) (*http.Request, *http.Response, error) {
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	catch := &catcher{base: k.client.Transport, headers: req.Headers}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpvisor", Version: "login"}, nil)
	cs, err := client.Connect(pctx, &mcp.StreamableClientTransport{
		Endpoint:   req.URL,
		HTTPClient: &http.Client{Transport: catch},
		MaxRetries: -1,
	}, nil)
	if err == nil {
		_, err = cs.ListTools(pctx, nil)
		caps := cs.InitializeResult().Capabilities
		if err == nil && caps != nil && caps.Prompts != nil {
			_, err = cs.ListPrompts(pctx, nil)
		}
		if err == nil && caps != nil && caps.Resources != nil {
			_, err = cs.ListResources(pctx, nil)
		}
		_ = cs.Close()
	}
	if r, resp := catch.got(); r != nil {
		return r.WithContext(ctx), resp, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("asking the server how to log in: %w", redactURL(err))
	}
	return nil, nil, fmt.Errorf("the server answered the handshake and listed its tools without asking for an OAuth login: %w", ErrNotProtected)
}

// catcher is the RoundTripper of a probe session: it adds the declared
// headers and keeps the first refusal that asks for a login, which ends
// the request that met it.
type catcher struct {
	base    http.RoundTripper
	headers map[string]string

	mu   sync.Mutex // guards the following
	req  *http.Request
	resp *http.Response
}

// errChallenged ends a probe's request that met a login challenge.
var errChallenged = errors.New("the server asks for a login")

func (c *catcher) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for name, v := range c.headers {
		r.Header.Set(name, v)
	}
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	header := resp.Header.Get("WWW-Authenticate")
	ch := bearer(header)
	asks := resp.StatusCode == http.StatusUnauthorized && ch != nil ||
		resp.StatusCode == http.StatusForbidden && ch != nil && ch.Params["error"] == "insufficient_scope"
	if !asks {
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	c.mu.Lock()
	if c.req == nil {
		c.req, c.resp = r, resp
	}
	c.mu.Unlock()
	return nil, errChallenged
}

// got is the first refusal kept, or nils.
func (c *catcher) got() (*http.Request, *http.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.req, c.resp
}
