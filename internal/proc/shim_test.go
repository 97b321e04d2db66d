//go:build linux

package proc_test

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/proc"
)

// Through the shim, the host sees the server as if it were its own child:
// Pid is the server's (and its group's id), ExitError says how the server
// ended, and the server's background children die with it.
func TestShimIsTransparent(t *testing.T) {
	cases := []struct{ script, want string }{
		{"exit 0", "process exited (exit status 0)"},
		{"exit 3", "process exited (exit status 3)"},
		{"kill -TERM $$", "process exited (signal: terminated)"},
		{"kill -SEGV $$", "process exited (signal: segmentation fault"},
		{"sleep 100 & echo child=$! >&2; exit 0", "process exited (exit status 0)"},
	}
	for _, c := range cases {
		t.Run(c.script, func(t *testing.T) {
			p, err := proc.Start(proc.Config{
				Command: []string{"sh", "-c", `echo pid=$$ pgid=$(cut -d' ' -f5 /proc/$$/stat) >&2; ` + c.script},
				Dir:     t.TempDir(), // for a core file
			})
			require.NoError(t, err)
			t.Cleanup(func() { p.Close() })
			select {
			case <-p.Exited():
			case <-time.After(10 * time.Second):
				t.Fatal("the server's exit was not seen")
			}
			msg := p.ExitError().Error()
			require.Contains(t, msg, c.want)
			pid := strconv.Itoa(p.Pid())
			require.Contains(t, msg, "pid="+pid+" pgid="+pid, "Pid is the server's, and its group's")
			if _, after, ok := strings.Cut(msg, "child="); ok {
				child, err := strconv.Atoi(strings.Fields(after)[0])
				require.NoError(t, err)
				require.ErrorIs(t, syscall.Kill(child, 0), syscall.ESRCH, "the server's child was killed and reaped")
			}
		})
	}
}
