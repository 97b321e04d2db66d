package manager_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/demo"
	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/manager"
)

// An in-process server is reached through its own Dialer, never through
// Options.Dial (which stands for processes and the network), and is used
// like any other.
func TestInProcessServer(t *testing.T) {
	m := newManager(t, manager.Options{Dial: failingDial(errors.New("Options.Dial must not be used"))})
	d := &testutil.InProcess{Server: demo.NewServer()}
	spec := manager.Spec{Transport: manager.TransportInProcess, Dial: d}
	require.NoError(t, m.Add("inner", spec))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := m.Wait(ctx, "inner", manager.StateConnected)
	require.NoError(t, err)
	require.Equal(t, "in-process", st.Endpoint)
	res, err := m.Call(ctx, "inner.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
	require.NoError(t, err)
	require.False(t, res.IsError)

	// Specs compare their Dialers by identity.
	require.True(t, spec.Equal(manager.Spec{Transport: manager.TransportInProcess, Dial: d}))
	require.False(t, spec.Equal(manager.Spec{Transport: manager.TransportInProcess, Dial: &testutil.InProcess{Server: d.Server}}))
}

func TestInProcessSpecProblems(t *testing.T) {
	probs := manager.Spec{Transport: manager.TransportInProcess}.WithDefaults().Problems()
	require.Equal(t, []string{"dial: an in-process server needs a Dialer"}, []string(probs))
	probs = manager.Spec{Transport: manager.TransportStdio, Command: []string{"x"}, Dial: &testutil.InProcess{}}.WithDefaults().Problems()
	require.Equal(t, []string{"dial: only an in-process server has a Dialer, this one is stdio"}, []string(probs))
	require.ErrorContains(t, newManager(t, manager.Options{}).Add("x", manager.Spec{Transport: manager.TransportInProcess}), "needs a Dialer")
}
