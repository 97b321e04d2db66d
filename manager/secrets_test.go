package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Values a declaration takes from the environment are hidden in whatever
// the server prints about itself: a server that echoes its arguments and
// environment on stderr as it dies (as is, JSON-quoted, URL-encoded), or
// prints them on stdout and so breaks the protocol, shows ${NAME} in its
// status, its events, the log at debug and the error a caller gets.
// Before, the stderr tail carried the values everywhere.
func TestSecretsHiddenInServerText(t *testing.T) {
	const arg, env = "argsecret/1234+abcd", `envsecret"5678\efgh`
	t.Setenv("MCPV_TEST_ARG", arg)
	t.Setenv("MCPV_TEST_ENV", env)
	// The script quotes and encodes the values itself: the command line is
	// shown as the endpoint, so they must not be written in it.
	stderr := `echo "starting with args: $*" >&2; printf 'env SECRET=%s\n' "$SECRET" >&2
printf 'config {"secret":"%s"}\n' "$(printf '%s' "$SECRET" | sed 's/\\/\\\\/g; s/"/\\"/g')" >&2
echo "GET /?key=$(echo "$1" | sed 's|.*=||; s|/|%2F|g; s|+|%2B|g')" >&2; exit 3`
	stdout := `echo "not JSON: $1"; sleep 10`
	logs := &testutil.SyncBuffer{}
	m := newManager(t, manager.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	tl := watch(t, m)
	for name, script := range map[string]string{"stderr": stderr, "stdout": stdout} {
		require.NoError(t, m.Add(name, decode(t, map[string]any{
			"command":     []any{"/bin/sh", "-c", script, "sh", "--api-key=${MCPV_TEST_ARG}"},
			"env":         map[string]any{"SECRET": "${MCPV_TEST_ENV}"},
			"max_retries": 0,
			"timeouts":    map[string]any{"connect": "5s", "request": "5s"},
		})))
	}
	var seen []string
	for _, name := range []string{"stderr", "stdout"} {
		for _, e := range tl.until(name, events.KindFailed, 20*time.Second) {
			seen = append(seen, fmt.Sprint(e.Fields))
		}
		st, err := m.Status(name)
		require.NoError(t, err)
		require.Contains(t, st.LastError, "${MCPV_TEST_ARG}", "the reference stands where the value was")
		seen = append(seen, st.LastError)
		_, err = m.Call(context.Background(), name+".x", nil, manager.CallOptions{FailFast: true})
		require.Error(t, err)
		seen = append(seen, err.Error())
	}
	seen = append(seen, logs.String())
	all := strings.Join(seen, "\n")
	require.Contains(t, all, "env SECRET=${MCPV_TEST_ENV}")
	require.Contains(t, all, `config {"secret":"${MCPV_TEST_ENV}"}`)
	require.Contains(t, all, "GET /?key=${MCPV_TEST_ARG}")
	require.Contains(t, all, `not JSON: --api-key=${MCPV_TEST_ARG}`)
	quoted, _ := json.Marshal(env)
	for _, v := range []string{arg, env, url.QueryEscape(arg), string(quoted[1 : len(quoted)-1])} {
		require.NotContains(t, all, v)
	}
}
