package manager_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// A server that answers 401 is not retried on the backoff schedule, which
// would only hammer it with the same missing credentials: it goes to state
// unauthorized at once with the challenge and what to do, and a call says
// so without waiting.
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
	st, err := m.Wait(ctx, "saas", manager.StateUnauthorized)
	require.NoError(t, err)
	require.Equal(t, 1, st.Attempts)
	require.Contains(t, st.LastError, `401 Unauthorized: the server requires authorization (WWW-Authenticate: Bearer resource_metadata=`)
	require.Contains(t, st.LastError, `not retried with the same credentials`)
	require.Equal(t, manager.Remedy{Kind: manager.RemedyCredentials, Server: "saas"}, st.Remedy)
	require.NotContains(t, st.LastError, "s3cret")
	require.Positive(t, hits.Load())
	_, err = m.Call(ctx, "saas.anything", nil, manager.CallOptions{})
	requireCode(t, err, manager.ErrConnectionFailed, "saas", `tools/call "anything"`)
	require.Contains(t, err.Error(), "server requires authorization: ")
	requireRemedy(t, err, manager.RemedyCredentials, "saas")
	require.ErrorIs(t, err, manager.ErrUnauthorized, "the outcome is in the chain, not only in the words")
	require.NotErrorIs(t, err, manager.ErrCannotStart)
}

// A call whose arguments could not fit in one frame is refused before it
// is sent, with the size and the limit, instead of ending the session
// mid-call.
func TestOversizeArgumentsAreRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: (&peers{}).dial, Rand: constRand(0)})
		require.NoError(t, m.Add("demo", fakeSpec(t, map[string]any{"max_frame_bytes": 1 << 20})))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)
		_, err = m.Call(context.Background(), "demo.echo", map[string]any{"text": strings.Repeat("x", 2<<20)}, manager.CallOptions{})
		requireCode(t, err, manager.ErrInvalidArguments, "demo", `tools/call "echo"`)
		require.Contains(t, err.Error(), "over the 1048576-byte frame limit (max_frame_bytes); the call was not sent")
		echo(t, m, "demo.echo", "the session is intact")
	})
}
