package control_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpvisor/mcpvisor/internal/control"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakeBackend struct {
	mu    sync.Mutex
	acted []string
}

func (f *fakeBackend) Snapshot() control.Snapshot {
	return control.Snapshot{PID: 42, Version: "v1", Servers: []control.ServerRow{{Name: "demo", State: "connected", Tools: 4}}}
}

func (f *fakeBackend) Act(name string, a control.Action) error {
	if name != "demo" {
		return errors.New("no server " + name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acted = append(f.acted, string(a)+" "+name)
	return nil
}

// shortDir is a temporary directory with a path short enough for a Unix
// socket (108 bytes at most).
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "ctl")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "mcpvisor")
}

func TestAShellFindsAndDrivesTheInstance(t *testing.T) {
	dir := shortDir(t)
	b := &fakeBackend{}
	srv, err := control.Listen(dir, b)
	require.NoError(t, err)
	defer srv.Close()

	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "only the user can reach the directory")
	st, err = os.Stat(srv.Path())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	found := control.Instances(dir)
	require.Equal(t, []string{srv.Path()}, found)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := control.Socket(found[0])
	snap, err := c.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, 42, snap.PID)
	assert.Equal(t, "demo", snap.Servers[0].Name)

	require.NoError(t, c.Act(ctx, "demo", control.Reconnect))
	err = c.Act(ctx, "nope", control.Disable)
	require.EqualError(t, err, "no server nope")
	assert.Equal(t, []string{"reconnect demo"}, b.acted)

	require.NoError(t, srv.Close())
	assert.NoFileExists(t, srv.Path(), "the socket goes with its instance")
	assert.Empty(t, control.Instances(dir))
}

func TestASocketLeftByADeadInstanceIsCleared(t *testing.T) {
	dir := shortDir(t)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	stale := filepath.Join(dir, "mcpvisor-999999.sock")
	ln, err := net.Listen("unix", stale)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody listens: a killed instance

	srv, err := control.Listen(dir, &fakeBackend{})
	require.NoError(t, err)
	defer srv.Close()
	assert.Equal(t, []string{srv.Path()}, control.Instances(dir))
	assert.NoFileExists(t, stale)
}

func TestDirPrefersTheRuntimeDir(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	assert.Equal(t, filepath.Join("/run/user/1000", "mcpvisor"), control.Dir("/state"))
	t.Setenv("XDG_RUNTIME_DIR", "")
	assert.Equal(t, filepath.Join("/state", "run"), control.Dir("/state"))
}
