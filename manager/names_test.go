package manager_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// Add only records intent; even a server whose dial takes an hour does not
// delay it, nor the servers added after it.
func TestAddReturnsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &peers{delay: time.Hour}
		fast := &peers{}
		dial := func(ctx context.Context, name string, spec manager.Spec) (mcp.Transport, error) {
			if name == "slow" {
				return slow.dial(ctx, name, spec)
			}
			return fast.dial(ctx, name, spec)
		}
		m := newManager(t, manager.Options{Dial: dial})
		start := time.Now()
		require.NoError(t, m.Add("slow", fakeSpec(t, nil)))
		require.NoError(t, m.Add("fast", fakeSpec(t, nil)))
		require.Zero(t, time.Since(start))
		require.Equal(t, manager.StateConnecting, mustStatus(t, m, "slow").State)

		_, err := m.Wait(context.Background(), "fast", manager.StateConnected)
		require.NoError(t, err)
		require.Zero(t, time.Since(start), "a slow server never delays another")
		require.Equal(t, manager.StateConnecting, mustStatus(t, m, "slow").State)
	})
}

// Names are case-insensitive, unknown names are reported with the known
// ones, and conflicts say how to resolve them.
func TestNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: (&peers{}).dial})
		_, err := m.Remove("git")
		requireCode(t, err, manager.ErrServerNotFound, "git", "remove")
		require.EqualError(t, err, `server "git": remove: no such server; no servers are declared`)

		git := fakeSpec(t, nil)
		for _, name := range []string{"npm", "git", "docker"} {
			require.NoError(t, m.Add(name, git))
		}
		require.Equal(t, []string{"docker", "git", "npm"}, m.Names())

		require.NoError(t, m.Add("git", git), "same name, identical spec: a no-op")
		require.NoError(t, m.Add(" GIT ", git), "names compare case-insensitively and are trimmed")
		require.Equal(t, []string{"docker", "git", "npm"}, m.Names())
		st, err := m.Status("Git")
		require.NoError(t, err)
		require.Equal(t, "git", st.Name, "the name keeps the case it was declared with")

		other := fakeSpec(t, map[string]any{"cwd": "/tmp"})
		err = m.Add("GIT", other)
		requireCode(t, err, manager.ErrNameConflict, "GIT", "add")
		require.EqualError(t, err, `server "GIT": add: server name conflict: "GIT" matches existing "git" (names are case-insensitive); `+
			`existing servers: docker, git, npm`)
		requireRemedy(t, err, manager.RemedyRename, "git")
		err = m.Add("git", other)
		requireCode(t, err, manager.ErrNameConflict, "git", "add")
		require.EqualError(t, err, `server "git": add: server name conflict: "git" is already declared with a different spec; `+
			`existing servers: docker, git, npm`)
		cur, err := m.Spec("git")
		require.NoError(t, err)
		require.Empty(t, cur.Cwd, "a refused Add leaves the existing server alone")

		for _, op := range []string{"status", "remove"} {
			var err error
			if op == "status" {
				_, err = m.Status("gitt")
			} else {
				_, err = m.Remove("gitt")
			}
			requireCode(t, err, manager.ErrServerNotFound, "gitt", op)
			require.EqualError(t, err, `server "gitt": `+op+`: no such server; did you mean "git"? known servers: docker, git, npm`)
		}
		_, err = m.Wait(context.Background(), "nope", manager.StateConnected)
		requireCode(t, err, manager.ErrServerNotFound, "nope", "wait")

		for _, bad := range []struct{ name, want string }{
			{"", `add: server name is empty`},
			{"my.git", `server "my.git": add: server name "my.git" contains '.', which separates server and tool names (e.g. "my_git")`},
			{"my git", `server "my git": add: server name "my git" contains whitespace`},
		} {
			err := m.Add(bad.name, git)
			require.ErrorIs(t, err, manager.ErrInvalidConfig, "Add(%q)", bad.name)
			require.EqualError(t, err, bad.want)
		}
		err = m.Add("x", manager.Spec{})
		requireCode(t, err, manager.ErrInvalidConfig, "x", "config")
		require.EqualError(t, err, `server "x": config: command: missing transport: set command = {"prog", "arg"} for a process or url = "http://…" for a remote server`)
	})
}

// Close disposes every server and refuses new ones with CLOSED.
func TestCloseThenAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failing := failingDial(errors.New("refused"))
		m := manager.New(manager.Options{Dial: failing})
		tl := watch(t, m)
		require.NoError(t, m.Add("a", fakeSpec(t, nil)))
		require.NoError(t, m.Add("b", fakeSpec(t, map[string]any{"backoff": map[string]any{"initial": "1h", "max": "1h"}})))
		tl.until("b", events.KindBackoff, time.Second)

		start := time.Now()
		require.NoError(t, m.Close(context.Background()))
		require.Zero(t, time.Since(start), "pending backoffs are cancelled, not waited out")
		require.Empty(t, m.Names())

		err := m.Add("c", fakeSpec(t, nil))
		requireCode(t, err, manager.ErrClosed, "c", "add")
		require.EqualError(t, err, `server "c": add: the host is shutting down`)

		var removed []string
		for {
			e, err := tl.sub.Recv(context.Background())
			if errors.Is(err, events.ErrClosed) {
				break // the manager's own bus is closed after the last removal
			}
			require.NoError(t, err)
			if e.Kind == events.KindRemoved {
				removed = append(removed, e.Server)
			}
		}
		require.ElementsMatch(t, []string{"a", "b"}, removed)
		require.NoError(t, m.Close(context.Background()), "Close is idempotent")
	})
}

// A disabled server is listed but never connected; calls say so.
func TestDisabledServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial})
		require.NoError(t, m.Add("off", fakeSpec(t, map[string]any{"enabled": false})))
		time.Sleep(time.Hour)
		require.Equal(t, manager.StateDisabled, mustStatus(t, m, "off").State)
		require.Zero(t, p.dialCount())

		_, err := m.Call(context.Background(), "off.echo", nil, manager.CallOptions{})
		requireCode(t, err, manager.ErrServerDisabled, "off", `tools/call "echo"`)

		done, err := m.Remove("off")
		require.NoError(t, err)
		<-done
	})
}

// Wait gives up at its deadline and says what the state is and why.
func TestWaitReportsWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: failingDial(errors.New("refused")), Rand: constRand(0)})
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"backoff": map[string]any{"initial": "1h", "max": "1h"}})))
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		st, err := m.Wait(ctx, "x", manager.StateConnected)
		requireCode(t, err, manager.ErrConnectionTimeout, "x", "wait")
		require.EqualError(t, err, `server "x": wait: still backoff, not connected (last error: server "x": spawn: refused)`)
		require.Equal(t, manager.StateBackoff, st.State)
	})
}

// A look-alike of a declared name (fullwidth, dotless i, Cyrillic letters,
// another composition of an accent) is a NAME_CONFLICT that names both,
// even with the same spec; a name that differs only in case is the same
// server.
func TestLookAlikeNamesConflict(t *testing.T) {
	m := newManager(t, manager.Options{Dial: failingDial(errors.New("unreachable"))})
	spec := fakeSpec(t, nil)
	require.NoError(t, m.Add("github", spec))
	require.NoError(t, m.Add("GitHub", spec), "case alone: the same server")
	require.NoError(t, m.Add("gith\u00fcb", spec))
	for _, alike := range []string{"ＧｉｔＨｕｂ", "gıthub", "gіthub", "githu\u0308b"} {
		err := m.Add(alike, spec)
		requireCode(t, err, manager.ErrNameConflict, alike, "add")
		require.Contains(t, err.Error(), "looks like existing", "%+q", alike)
	}
	require.ElementsMatch(t, []string{"github", "gith\u00fcb"}, m.Names())
}
