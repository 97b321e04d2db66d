package oauthtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
)

// handshakeMethods are the JSON-RPC methods of the MCP handshake (of both
// protocol generations), which
// [ResourceServerOptions].OpenHandshake lets through without a token.
var handshakeMethods = []string{"server/discover", "initialize", "notifications/initialized"}

// openHandshake sends the handshake straight to endpoint, past the bearer
// and scope checks, and everything else to guarded: a server that lets any
// client see who it is and asks for a login only when it is asked for
// something (tools/list, a call, the event stream).
func openHandshake(endpoint, guarded http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			guarded.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if slices.Contains(handshakeMethods, rpcMethod(body)) {
			endpoint.ServeHTTP(w, r)
			return
		}
		guarded.ServeHTTP(w, r)
	})
}

// rpcMethod is the method of one JSON-RPC message, or "" (a response, a
// batch, or not JSON).
func rpcMethod(body []byte) string {
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return ""
	}
	return msg.Method
}

// recordVersions notes every request that comes without the
// MCP-Protocol-Version header, which a client sends on each request but
// the first initialize (before it knows the version).
func (rs *ResourceServer) recordVersions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
			rs.mu.Lock()
			if !slices.Contains(rs.versions, v) {
				rs.versions = append(rs.versions, v)
			}
			rs.mu.Unlock()
			next.ServeHTTP(w, r)
			return
		}
		what := r.Method
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
			if err != nil {
				http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			m := rpcMethod(body)
			if m == "initialize" {
				next.ServeHTTP(w, r)
				return
			}
			what += " " + m
		}
		rs.mu.Lock()
		rs.unversioned = append(rs.unversioned, what)
		rs.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// Unversioned lists the requests that came without the
// MCP-Protocol-Version header, other than initialize, as "METHOD" or
// "POST json-rpc-method" (no method: a response or a batch), in the order
// they came.
func (rs *ResourceServer) Unversioned() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.unversioned)
}

// ProtocolVersions lists the MCP-Protocol-Version headers requests came
// with, each once, in the order first seen.
func (rs *ResourceServer) ProtocolVersions() []string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return slices.Clone(rs.versions)
}
