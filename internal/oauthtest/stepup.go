package oauthtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// maxBody bounds the request body requireScopes reads to find the tool.
const maxBody = 4 << 20

// requireScopes answers 403 insufficient_scope when the token lacks a scope
// the request needs: the base scopes always, and the admin scope for a call
// of the admin tool. It runs after auth.RequireBearerToken, whose own scope
// option is not used for two reasons: it applies to the whole endpoint, not
// to one tool, and its 403 challenge carries no error="insufficient_scope",
// without which the go-sdk client does not step up but retries once and
// fails.
//
// The challenge names every scope the request needs, not just the missing
// one (the go-sdk client adds what it was granted before anyway).
func (rs *ResourceServer) requireScopes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need := rs.scopes
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
			if err != nil {
				http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if calledTool(body) == ToolAdmin {
				need = append(slices.Clone(need), rs.adminScope)
			}
		}
		ti := auth.TokenInfoFromContext(r.Context())
		if ti != nil && subset(need, ti.Scopes) {
			next.ServeHTTP(w, r)
			return
		}
		rs.mu.Lock()
		rs.stats.InsufficientScope++
		rs.mu.Unlock()
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(
			`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q, error_description=%q`,
			joinScopes(need), rs.MetadataURL(), "this call needs "+joinScopes(need)))
		http.Error(w, "insufficient scope", http.StatusForbidden)
	})
}

// calledTool returns the tool a JSON-RPC tools/call request calls, or "".
func calledTool(body []byte) string {
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return ""
	}
	return msg.Params.Name
}

// countUnauthorized counts the 401 answers of next.
func (rs *ResourceServer) countUnauthorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == http.StatusUnauthorized {
			rs.mu.Lock()
			rs.stats.Unauthorized++
			rs.mu.Unlock()
		}
	})
}

// statusRecorder remembers the status written through it. Unwrap lets
// http.ResponseController reach the real writer, which the streamable
// handler needs to flush its event streams.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
