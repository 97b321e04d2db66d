package manager_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// A server that answers 401 is not retried on the backoff schedule, which
// would only hammer it with the same missing credentials: the server is
// failed at once with the challenge and what to do.
func TestUnauthorizedIsNotRetried(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	m := newManager(t, manager.Options{})
	require.NoError(t, m.Add("saas", decode(t, map[string]any{"url": srv.URL + "/mcp", "headers": map[string]any{"Authorization": "Bearer expired-s3cret"}})))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := m.Wait(ctx, "saas", manager.StateFailed)
	require.NoError(t, err)
	require.Equal(t, 1, st.Attempts)
	require.Contains(t, st.LastError, `401 Unauthorized: the server requires authorization (WWW-Authenticate: Bearer resource_metadata=`)
	require.Contains(t, st.LastError, `not retried: set the credentials it wants`)
	require.NotContains(t, st.LastError, "s3cret")
	require.Positive(t, hits.Load())
}
