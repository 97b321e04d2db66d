package gateway_test

// The subjects of TestSameAsDirect served over streamable HTTP, where
// mcpvisor speaks 2026-07-28 with a server that offers it (one that keeps
// no session) and 2025-11-25 with one that keeps sessions.

import (
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/interop"
)

// conformanceWithSessions is the conformance server over streamable HTTP
// keeping a session per client, which offers only 2025-11-25.
func conformanceWithSessions(t *testing.T) subject {
	s := conformanceSubject(t)
	s.label, s.url = "conf over HTTP with sessions", startConformanceHTTP(t, s.argv[0], false)
	return s
}

// conformanceSessionless is the conformance server over streamable HTTP
// keeping no session, which offers 2026-07-28: mcpvisor speaks that.
func conformanceSessionless(t *testing.T) subject {
	s := conformanceSubject(t)
	s.label, s.url, s.spoken = "conf over sessionless HTTP", startConformanceHTTP(t, s.argv[0], true), "2026-07-28"
	return s
}

// everythingOverHTTP is server-everything over streamable HTTP, which
// keeps sessions.
func everythingOverHTTP(t *testing.T) subject {
	s := everythingSubject(t)
	s.label, s.url = "everything over HTTP", interop.StartHTTP(t)
	return s
}

// startConformanceHTTP runs the conformance server bin over streamable
// HTTP on a free loopback port (keeping no session if stateless) until
// the test ends, and returns its endpoint once it accepts connections.
func startConformanceHTTP(t *testing.T, bin string, stateless bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cmd := exec.Command(bin, "-http", addr, "-stateless="+strconv.FormatBool(stateless))
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the conformance server listening on %s", addr)
	return "http://" + addr + "/mcp"
}
