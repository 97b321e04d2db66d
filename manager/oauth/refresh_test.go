package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// roundTripFunc is an in-memory token endpoint.
type roundTripFunc func(*http.Request) *http.Response

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r), nil }

// A token is refreshed a tenth of its lifetime before it expires (at most
// five minutes before), by whichever request comes then, without anyone
// being refused first; before that, no request goes to the token endpoint.
func TestRefreshBeforeExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refreshes atomic.Int32
		endpoint := roundTripFunc(func(r *http.Request) *http.Response {
			refreshes.Add(1)
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(rec).Encode(map[string]any{
				"access_token": "new", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "r2",
			})
			return rec.Result()
		})
		k := NewKeeper(KeeperOptions{Dir: t.TempDir(), Transport: endpoint})
		now := time.Now()
		rec := &Record{Current: "https://as", Grants: map[string]*Grant{"https://as": {
			Issuer: "https://as", ClientID: "c", TokenURL: "https://as/token", AuthStyle: 1,
			Token: Token{Access: "old", Refresh: "r1", IssuedAt: now, Expiry: now.Add(time.Hour)},
		}}}
		require.NoError(t, k.Store().Save("s", rec))
		src := k.Source("s", "s", Config{})
		ctx := context.Background()

		time.Sleep(54*time.Minute + 59*time.Second)
		access, _, err := src.token(ctx)
		require.NoError(t, err)
		require.Equal(t, "old", access)
		require.Zero(t, refreshes.Load())

		time.Sleep(time.Second) // five minutes before expiry
		access, _, err = src.token(ctx)
		require.NoError(t, err)
		require.Equal(t, "new", access)
		require.Equal(t, int32(1), refreshes.Load())

		access, _, err = src.token(ctx)
		require.NoError(t, err)
		require.Equal(t, "new", access)
		require.Equal(t, int32(1), refreshes.Load(), "a fresh token is not refreshed again")

		// The refreshed grant is what a restart finds.
		stored, err := k.Store().Load("s")
		require.NoError(t, err)
		require.Equal(t, "new", stored.current().Token.Access)
		require.Equal(t, "r2", stored.current().Token.Refresh)
	})
}

func TestRefreshAt(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		life, before time.Duration
	}{
		{time.Hour, 5 * time.Minute},
		{10 * time.Minute, time.Minute},
		{time.Minute, 10 * time.Second},
		{4 * time.Second, 2 * time.Second},
	} {
		got := refreshAt(Token{IssuedAt: at, Expiry: at.Add(tc.life)})
		require.Equal(t, at.Add(tc.life-tc.before), got, "lifetime %s", tc.life)
	}
	require.True(t, refreshAt(Token{}).After(at.AddDate(100, 0, 0)), "no expiry: never")
}
