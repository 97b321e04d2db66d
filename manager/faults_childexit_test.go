package manager_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A server that dies while a grandchild holds its stdout ends the session
// at once, with its exit status, not at the next failed health ping
// 10-15 s later. Without the shim, the host's own watch of the process
// does it; with the shim, also the shim killing what is left of the group.
func TestStdioChildExitEndsSession(t *testing.T) {
	for _, mode := range []string{"shim", "direct"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "direct" {
				t.Setenv("MCPVISOR_SHIM", "off")
			}
			f := faultManager(t, manager.Options{})
			tl := watch(t, f.m)
			require.NoError(t, f.m.Add("x", f.fakeIn(quick(nil), "--grandchild-holds-stdout", "--crash-after=2s", "--exit-code=3")))
			tl.until("x", events.KindConnected, patience)
			evs := tl.until("x", events.KindDisconnected, 5*time.Second)
			msg, _ := evs[len(evs)-1].Fields["error"].(string)
			require.Contains(t, msg, "exit status 3", "the disconnect says how the server exited")
			st, err := f.m.Status("x")
			require.NoError(t, err)
			require.NotEqual(t, manager.StateConnected, st.State)
			require.Contains(t, st.LastError, "exit status 3")
		})
	}
}
