package oauth

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The access token goes to the server's origin only: not to a host a
// redirect leads to, nor to a message endpoint an SSE server names
// elsewhere, nor to the same host over another scheme.
func TestTransportSendsTokenToServerOriginOnly(t *testing.T) {
	seen := map[string]string{} // path → Authorization, as the server got it
	record := func(w http.ResponseWriter, r *http.Request) { seen[r.Host+r.URL.Path] = r.Header.Get("Authorization") }
	other := httptest.NewServer(http.HandlerFunc(record))
	defer other.Close()
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, other.URL+"/moved", http.StatusTemporaryRedirect)
			return
		}
		record(w, r)
	}))
	defer server.Close()

	k := NewKeeper(KeeperOptions{Dir: t.TempDir()})
	now := time.Now()
	require.NoError(t, k.Store().Save("s", &Record{Current: "https://as", Grants: map[string]*Grant{"https://as": {
		Issuer: "https://as", ClientID: "c", TokenURL: "https://as/token",
		Token: Token{Access: "tok", IssuedAt: now, Expiry: now.Add(time.Hour)},
	}}}))
	client := &http.Client{Transport: k.Source("s", "s", Config{}).Transport(server.URL+"/mcp", http.DefaultTransport)}
	host := strings.TrimPrefix(server.URL, "http://")
	otherHost := strings.TrimPrefix(other.URL, "http://")

	for _, tc := range []struct {
		url, seenAt, want string
	}{
		{server.URL + "/mcp", host + "/mcp", "Bearer tok"},
		{server.URL + "/message?session=1", host + "/message", "Bearer tok"},
		{other.URL + "/message?session=1", otherHost + "/message", ""}, // an SSE endpoint elsewhere
		{server.URL + "/moved", otherHost + "/moved", ""},              // a 307 elsewhere
	} {
		resp, err := client.Post(tc.url, "application/json", strings.NewReader("{}"))
		require.NoError(t, err, tc.url)
		resp.Body.Close()
		got, ok := seen[tc.seenAt]
		require.True(t, ok, "%s never reached %s", tc.url, tc.seenAt)
		require.Equal(t, tc.want, got, tc.url)
	}

	// Same host and port, but not the scheme: no token.
	var sent string
	tr := k.Source("s", "s", Config{}).Transport("https://"+host+"/mcp", roundTripCtx(func(r *http.Request) (*http.Response, error) {
		sent = r.Header.Get("Authorization")
		return httptest.NewRecorder().Result(), nil
	}))
	req, err := http.NewRequest(http.MethodGet, server.URL+"/mcp", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	require.NoError(t, err)
	require.Empty(t, sent)
}
