package luaapi_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// scanCounter counts the servers the manager goes over on the runtime's
// behalf: listing the names goes over all of them, and so does every
// question about a server it does not run (its error suggests the closest
// name among all).
type scanCounter struct {
	*manager.Manager
	scanned atomic.Int64
}

func (c *scanCounter) count() { c.scanned.Add(int64(len(c.Manager.Names()))) }

func (c *scanCounter) Names() []string {
	names := c.Manager.Names()
	c.scanned.Add(int64(len(names)))
	return names
}

func (c *scanCounter) Spec(name string) (manager.Spec, error) {
	spec, err := c.Manager.Spec(name)
	if err != nil {
		c.count()
	}
	return spec, err
}

func (c *scanCounter) Status(name string) (manager.Status, error) {
	st, err := c.Manager.Status(name)
	if err != nil {
		c.count()
	}
	return st, err
}

// Applying a config of n new servers goes over the declared servers a
// fixed number of times, not once per server: a config of 2000 makes the
// manager look at a few thousand servers, never millions. It counts work
// rather than timing it (see BenchmarkApplyLinear for the time).
func TestApplyingAConfigIsLinear(t *testing.T) {
	const n = 2000
	m := manager.New(manager.Options{Dial: inMemoryDemoDial(t)})
	c := &scanCounter{Manager: m}
	rt, err := luaapi.New(luaapi.Options{Manager: c, Binary: testBinary, ScriptDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() {
		rt.Close()
		require.NoError(t, m.Close(context.Background()))
	})

	res, err := rt.LoadConfigSource(context.Background(), "/config/startup.lua", disabledServers(n, false))
	require.NoError(t, err)
	require.Len(t, res.Added, n)
	require.LessOrEqual(t, c.scanned.Load(), int64(4*n), "servers looked at to apply %d new ones", n)

	// Applying it again changes nothing, and is as cheap.
	c.scanned.Store(0)
	res, err = rt.LoadConfigSource(context.Background(), "/config/startup.lua", disabledServers(n, false))
	require.NoError(t, err)
	require.Equal(t, n, res.Unchanged)
	require.LessOrEqual(t, c.scanned.Load(), int64(4*n), "servers looked at to apply %d unchanged ones", n)
}
