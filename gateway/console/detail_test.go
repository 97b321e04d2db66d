package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// A stdio server's page shows what it last wrote on stderr, as text and
// with its secrets hidden.
func TestServerPageShowsStderrTail(t *testing.T) {
	f := newFixture(t, "", nil)
	none := 0
	require.NoError(t, f.m.Add("noisy", manager.Spec{Transport: manager.TransportStdio, MaxRetries: &none,
		Command: []string{"/bin/sh", "-c", `echo "<script>alert(1)</script> key $K" >&2; echo "  fatal: bye" >&2; exit 1`},
		Env:     map[string]string{"K": "hunter2-hunter2"}, Secrets: map[string]string{"API_KEY": "hunter2-hunter2"}}))
	f.waitState(t, "noisy", manager.StateFailed)
	code, page := get(t, browser(t), f.url+"/ui/servers/noisy")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, page, "<pre class=\"output\" id=\"stderr\">&lt;script&gt;alert(1)&lt;/script&gt; key ${API_KEY}\n  fatal: bye</pre>")
	require.NotContains(t, page, "hunter2-hunter2")
}
