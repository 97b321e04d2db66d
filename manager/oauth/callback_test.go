package oauth

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Only the redirect with the state of the login under way ends it: any
// page can send the browser to the loopback port, and one that does
// (with an error, say) must not abort the login.
func TestCallbackIgnoresRedirectsWithAnotherState(t *testing.T) {
	cb, err := listen(0)
	require.NoError(t, err)
	defer cb.close()
	require.True(t, cb.expect("https://as.example/authorize?client_id=c&state=s1"))

	for _, tc := range []struct {
		query string
		want  int
	}{
		{"?error=access_denied", http.StatusBadRequest},
		{"?error=access_denied&state=other", http.StatusBadRequest},
		{"?code=forged&state=other", http.StatusBadRequest},
		{"?code=good&state=s1&iss=https://as.example", http.StatusOK},
		{"?code=again&state=s1", http.StatusConflict},
	} {
		resp, err := http.Get(cb.url + tc.query)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, tc.want, resp.StatusCode, tc.query)
	}
	res, err := cb.wait(t.Context())
	require.NoError(t, err)
	require.Equal(t, "good", res.Code)
	require.Equal(t, "s1", res.State)
}

// Before the authorization request is made, no redirect is taken.
func TestCallbackWithoutStateTakesNothing(t *testing.T) {
	cb, err := listen(0)
	require.NoError(t, err)
	defer cb.close()
	resp, err := http.Get(cb.url + "?code=c")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.False(t, cb.expect("https://as.example/authorize?client_id=c"))
}
