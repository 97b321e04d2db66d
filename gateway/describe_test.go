package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mcpvisor/mcpvisor/manager"
)

// Every state is told in words that say what it means for the model: why
// the server is down, whether and when it is tried again.
func TestDescribeEveryState(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		st   manager.Status
		want string
	}{
		{manager.Status{Name: "a", State: manager.StateConnected, Tools: 1, Resources: 0, Prompts: 2},
			"a: connected, offering 1 tool, 0 resources and 2 prompts."},
		{manager.Status{Name: "a", State: manager.StateConnecting}, "a: starting."},
		{manager.Status{Name: "a", State: manager.StateConnecting, Attempts: 2, LastError: "refused"},
			"a: down, connecting again after 2 failed attempts. The last error: refused."},
		{manager.Status{Name: "a", State: manager.StateConnecting, Waiting: "max connections (2) reached"},
			"a: waiting for its turn to connect (max connections (2) reached)."},
		{manager.Status{Name: "a", State: manager.StateBackoff, Attempts: 3, LastError: "refused", NextAttempt: now.Add(1234 * time.Millisecond)},
			"a: down after 3 failed attempts. The last error: refused. It is tried again in 1.3s. Its tools answer with an error until then."},
		{manager.Status{Name: "a", State: manager.StateOpen, Attempts: 5, LastError: "refused", NextAttempt: now.Add(30 * time.Second)},
			"a: down after 5 failed attempts in a row, so it is not tried for a while. The last error: refused. It is tried again in 30s."},
		{manager.Status{Name: "a", State: manager.StateFailed, Attempts: 4, LastError: "exit status 1"},
			"a: down for good after 4 failed attempts. The last error: exit status 1. It is not tried again until the user reconnects it."},
		{manager.Status{Name: "a", State: manager.StateUnauthorized, LastError: "401"},
			"a: the server asks for a login. The last error: 401. It is not tried again until the user logs in."},
		{manager.Status{Name: "a", State: manager.StateIdle}, "a: idle, closed after a while unused; calling one of its tools starts it again."},
		{manager.Status{Name: "a", State: manager.StateDisabled}, "a: turned off by the user; it offers nothing until they turn it on."},
		{manager.Status{Name: "a", State: manager.StateClosing}, "a: being removed."},
		{manager.Status{Name: "a\x1b[2J", State: manager.StateFailed, Attempts: 1, LastError: "bad\nline"},
			`a\x1b[2J: down for good after 1 failed attempt. The last error: bad\nline. It is not tried again until the user reconnects it.`},
	} {
		assert.Equal(t, tt.want, describe(tt.st, now), tt.st.State.String())
	}
}
