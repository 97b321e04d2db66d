package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// storedGrant saves a grant whose access token is due for refresh and
// returns its Source, with endpoint as the token endpoint.
func storedGrant(t *testing.T, endpoint http.RoundTripper) (*Keeper, *Source) {
	t.Helper()
	k := NewKeeper(KeeperOptions{Dir: t.TempDir(), Transport: endpoint})
	now := time.Now()
	rec := &Record{Current: "https://as", Grants: map[string]*Grant{"https://as": {
		Issuer: "https://as", ClientID: "c", TokenURL: "https://as/token", AuthStyle: 1,
		Token: Token{Access: "old", Refresh: "r1", IssuedAt: now.Add(-2 * time.Hour), Expiry: now.Add(-time.Minute)},
	}}}
	require.NoError(t, k.Store().Save("s", rec))
	return k, k.Source("s", "s", Config{})
}

// Only a token endpoint that says the grant or the client is no good ends
// the login; any other failure (rate limiting, a timeout, a missing page,
// a request it could not read, an outage) fails the request and keeps
// the refresh token for the next one.
func TestRefreshFailureKeepsLoginUnlessRefused(t *testing.T) {
	for _, tc := range []struct {
		status  int
		code    string
		refused bool
	}{
		{http.StatusBadRequest, "invalid_grant", true},
		{http.StatusUnauthorized, "invalid_client", true},
		{http.StatusBadRequest, "unauthorized_client", true},
		{http.StatusTooManyRequests, "", false},
		{http.StatusRequestTimeout, "", false},
		{http.StatusNotFound, "", false},
		{http.StatusUnauthorized, "", false},
		{http.StatusBadRequest, "invalid_request", false},
		{http.StatusServiceUnavailable, "", false},
		{http.StatusInternalServerError, "invalid_grant", false},
	} {
		t.Run(fmt.Sprintf("%d %s", tc.status, tc.code), func(t *testing.T) {
			endpoint := roundTripFunc(func(r *http.Request) *http.Response {
				rec := httptest.NewRecorder()
				rec.Header().Set("Content-Type", "application/json")
				rec.WriteHeader(tc.status)
				body := map[string]any{"secret_echo": "s3cr3t"}
				if tc.code != "" {
					body["error"] = tc.code
				}
				_ = json.NewEncoder(rec).Encode(body)
				return rec.Result()
			})
			k, src := storedGrant(t, endpoint)
			_, _, err := src.token(t.Context())
			require.Error(t, err)
			require.NotContains(t, err.Error(), "s3cr3t", "the response body is not shown")
			var login *LoginRequiredError
			require.Equal(t, tc.refused, errors.As(err, &login), "login required: %v", err)
			stored, lerr := k.Store().Load("s")
			require.NoError(t, lerr)
			if tc.refused {
				require.Empty(t, stored.current().Token.Refresh)
				return
			}
			require.Equal(t, "r1", stored.current().Token.Refresh, "the login is kept")
			require.Nil(t, src.LoginError())
		})
	}
}

// A request that gives up while its refresh is under way does not lose
// the refresh's answer: the old refresh token is spent by then (rotation),
// so the new one must be kept for the requests that follow.
func TestRefreshOutlivesCancelledRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		asked := make(chan struct{})
		release := make(chan struct{})
		endpoint := http.RoundTripper(roundTripCtx(func(r *http.Request) (*http.Response, error) {
			close(asked)
			<-release
			if err := r.Context().Err(); err != nil {
				return nil, err
			}
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(rec).Encode(map[string]any{
				"access_token": "new", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "r2",
			})
			return rec.Result(), nil
		}))
		k, src := storedGrant(t, endpoint)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, _, err := src.token(ctx)
			errc <- err
		}()
		<-asked
		cancel()
		synctest.Wait()
		close(release)
		require.ErrorIs(t, <-errc, context.Canceled)
		synctest.Wait()

		stored, err := k.Store().Load("s")
		require.NoError(t, err)
		require.Equal(t, "r2", stored.current().Token.Refresh)
		access, _, err := src.token(context.Background())
		require.NoError(t, err)
		require.Equal(t, "new", access)
	})
}

// roundTripCtx is an in-memory token endpoint that may fail.
type roundTripCtx func(*http.Request) (*http.Response, error)

func (f roundTripCtx) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
