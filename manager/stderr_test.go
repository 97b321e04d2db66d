package manager_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// What a stdio server last wrote on stderr can be read, one line a line
// with its indentation, after it died, with the values of its secrets
// hidden; the lines of a server that never started are empty.
func TestStderrTailOfADeadServer(t *testing.T) {
	t.Setenv("MCPV_TEST_TAIL", "tail-secret-9876")
	m, _ := procManager(t)
	require.NoError(t, m.Add("dies", decode(t, map[string]any{
		"command":     []any{"/bin/sh", "-c", `echo "loading config" >&2; echo "  token $TOKEN" >&2; echo "panic: no database" >&2; exit 2`},
		"env":         map[string]any{"TOKEN": "${MCPV_TEST_TAIL}"},
		"max_retries": 0,
	})))
	waitState(t, m, "dies", manager.StateFailed)
	tail, err := m.StderrTail("dies")
	require.NoError(t, err)
	require.Equal(t, "loading config\n  token ${MCPV_TEST_TAIL}\npanic: no database", tail)
	require.False(t, strings.Contains(tail, "tail-secret-9876"))

	_, err = m.StderrTail("nosuch")
	requireCode(t, err, manager.ErrServerNotFound, "nosuch", "stderr")
}
