package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call over HTTP ends when its client can no longer get the answer:
// when the POST that carries it ends first (streamable HTTP: the client
// closed the connection, and without an event store the answer has
// nowhere to go), when the GET that carries its session's stream ends
// (SSE), or when the client ends its session with DELETE. The go-sdk
// keeps running the handler in each case (and DELETE waits for it), so
// the gateway follows those requests itself.

// Why a call over HTTP was cancelled upstream.
var (
	errRequestGone    = errors.New("the client closed the HTTP request that carried the call")
	errSessionDeleted = errors.New("the client ended its session (DELETE) while the call was in flight")
)

// lifeHeader carries, on a streamable POST as the go-sdk hands its
// headers to the handlers, the token under which the gateway keeps that
// request's context. Whatever a client sends under that name is dropped.
const lifeHeader = "Mcpvisor-Request"

// streamLifeKey is the context key of the GET that carries an SSE
// session; the go-sdk gives every request of the session the values of
// the context it connected with.
type streamLifeKey struct{}

// requestLives finds the HTTP request whose end ends a call.
type requestLives struct {
	next    atomic.Uint64
	byToken sync.Map // token → the request's context
}

// streamable wraps the streamable HTTP handler of ep: a POST of a
// session takes the fast path if it can (fastPost), else makes its
// context known to the calls it carries, and a DELETE cancels the
// session's calls before the go-sdk closes the session (which waits for
// them).
func (g *Gateway) streamable(ep *endpoint, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(lifeHeader)
		id := r.Header.Get("Mcp-Session-Id")
		var s *session
		if id != "" {
			s = g.clients.byMCPID(id)
		}
		switch {
		case s == nil:
		case r.Method == http.MethodPost:
			defer s.serving()()
			if g.fast && g.fastPost(ep, s, w, r) {
				return
			}
			tok := strconv.FormatUint(g.lives.next.Add(1), 36)
			r.Header.Set(lifeHeader, tok)
			g.lives.byToken.Store(tok, r.Context())
			defer g.lives.byToken.Delete(tok)
		case r.Method == http.MethodDelete:
			// Closing the session refuses every answer still to be
			// written: the cancelled calls' answers go out first.
			s.cancel(errSessionDeleted)
			t := time.NewTimer(deleteWait)
			select {
			case <-s.served():
			case <-t.C:
			}
			t.Stop()
		}
		next.ServeHTTP(w, r)
	})
}

// deleteWait bounds how long a DELETE waits for the answers of the calls
// it cancelled to go out.
const deleteWait = 2 * time.Second

// sse wraps the SSE handler: the GET that opens a session makes its
// context known to the session's calls.
func (g *Gateway) sse(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(lifeHeader)
		if r.Method == http.MethodGet {
			r = r.WithContext(context.WithValue(r.Context(), streamLifeKey{}, r.Context()))
		}
		next.ServeHTTP(w, r)
	})
}

// life is the context of the HTTP request that must outlive a call whose
// handler has ctx and extra, or nil (stdio, whose session ends with its
// input).
func (g *Gateway) life(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	if extra != nil && extra.Header != nil {
		if tok := extra.Header.Get(lifeHeader); tok != "" {
			if life, ok := g.lives.byToken.Load(tok); ok {
				return life.(context.Context)
			}
		}
	}
	if life, ok := ctx.Value(streamLifeKey{}).(context.Context); ok {
		return life
	}
	return nil
}

// sseDiscover keeps the legacy SSE transport on the protocol generation it
// is defined for. The go-sdk works out which versions an SSE session can
// serve only after it has told the client where to post, so a client quick
// to ask server/discover was sometimes offered 2026-07-28, which that
// transport does not carry, and its session was then taken as initialized;
// server/discover is refused there, as the go-sdk refuses it to a session
// of the older generation, and the client initializes.
func sseDiscover(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "server/discover" && ctx.Value(streamLifeKey{}) != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
				Message: "server/discover is not served over the legacy SSE transport; initialize instead"}
		}
		return next(ctx, method, req)
	}
}
