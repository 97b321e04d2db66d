package gateway_test

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/gateway"
)

// The console is served at /ui without the bearer token (it asks for the
// token itself, as a browser cannot send the header), behind the same
// Host and Origin checks as the MCP endpoints, which still need the token.
func TestConsoleMountedBesideTheEndpoints(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.WriteString(w, "console "+r.URL.Path)
	})
	r := newRig(t, nil, gateway.HTTPOptions{Token: "s3cret", Console: ui})
	for _, path := range []string{"/ui", "/ui/", "/ui/servers/demo"} {
		resp, err := http.Get(r.base + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Equal(t, "console "+path, string(b))
	}
	code, _, _ := post(t, r.base+"/mcp", initializeBody, nil)
	assert.Equal(t, http.StatusUnauthorized, code, "/mcp without the token")
	code, _, _ = post(t, r.base+"/uiother", initializeBody, nil)
	assert.Equal(t, http.StatusUnauthorized, code, "only /ui and below are the console's")

	before := hits.Load()
	_, port, err := net.SplitHostPort(strings.TrimPrefix(r.base, "http://"))
	require.NoError(t, err)
	code, _, _ = post(t, r.base+"/ui/servers/demo/disable", "", map[string]string{"Origin": "https://evil.example"})
	assert.Equal(t, http.StatusForbidden, code, "a foreign page's form")
	code, _, _ = post(t, r.base+"/ui/servers/demo/disable", "", map[string]string{"Host": "rebound.example:" + port})
	assert.Equal(t, http.StatusForbidden, code, "a rebound name")
	assert.Equal(t, before, hits.Load(), "refused requests reached the console")
}
