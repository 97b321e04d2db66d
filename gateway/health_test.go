package gateway

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHealthChecksNeedNoTokenAndSayNothingElse(t *testing.T) {
	var ready atomic.Bool
	protected := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "token please", http.StatusUnauthorized)
	})
	h := withHealth(protected, ready.Load)
	get := func(method, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, body := get("GET", "/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, _ = get("GET", "/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code, "not ready while servers start")
	ready.Store(true)
	code, body = get("GET", "/readyz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, _ = get("POST", "/healthz")
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	code, _ = get("GET", "/mcp")
	assert.Equal(t, http.StatusUnauthorized, code, "everything else still needs the token")
	code, _ = get("GET", "/healthz/x")
	assert.Equal(t, http.StatusUnauthorized, code)
}
