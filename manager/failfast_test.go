package manager_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

// A caller that asks to fail fast (the gateway, on behalf of a client) gets
// an answer at once from a server whose connection attempts fail: the last
// error and when the next attempt is due. Other callers wait for that
// attempt, up to their timeout.
func TestCallFailFastOnAnUnreachableServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t, manager.Options{Dial: failingDial(errors.New("connection refused")), Rand: constRand(0)})
		require.NoError(t, m.Add("x", fakeSpec(t, map[string]any{"backoff": map[string]any{"initial": "10s", "max": "10s"}})))
		_, err := m.Wait(context.Background(), "x", manager.StateBackoff)
		require.NoError(t, err)

		start := time.Now()
		_, err = m.Call(context.Background(), "x.echo", nil, manager.CallOptions{FailFast: true, Timeout: 5 * time.Second})
		require.Zero(t, time.Since(start), "a fail-fast call waited")
		requireCode(t, err, manager.ErrConnectionFailed, "x", `tools/call "echo"`)
		require.Contains(t, err.Error(), "connection refused")
		r := requireRemedy(t, err, manager.RemedyWait, "x")
		require.Equal(t, start.Add(10*time.Second), r.At, "the remedy says when the next attempt is")

		_, err = m.Call(context.Background(), "x.echo", nil, manager.CallOptions{Timeout: time.Second})
		require.Equal(t, time.Second, time.Since(start), "a normal call waits for the attempt, up to its timeout")
		requireCode(t, err, manager.ErrConnectionFailed, "x", `tools/call "echo"`)
	})
}

// A server that loses a session is reconnecting, not unreachable: a
// fail-fast call waits for the reconnect and is served — whether the
// session had proven itself (up longer than backoff.max) or not.
func TestCallFailFastWaitsForAReconnect(t *testing.T) {
	for _, up := range []time.Duration{time.Minute, 500 * time.Millisecond} {
		t.Run(up.String(), func(t *testing.T) { failFastWaitsForReconnect(t, up) })
	}
}

func failFastWaitsForReconnect(t *testing.T, up time.Duration) {
	synctest.Test(t, func(t *testing.T) {
		p := &peers{}
		m := newManager(t, manager.Options{Dial: p.dial, Rand: constRand(0)})
		require.NoError(t, m.Add("demo", fakeSpec(t, map[string]any{"backoff": map[string]any{"initial": "2s", "max": "2s"}})))
		_, err := m.Wait(context.Background(), "demo", manager.StateConnected)
		require.NoError(t, err)
		time.Sleep(up)
		p.drop(t)
		_, err = m.Wait(context.Background(), "demo", manager.StateBackoff)
		require.NoError(t, err)

		start := time.Now()
		res, err := m.Call(context.Background(), "demo.echo", map[string]any{"text": "back"}, manager.CallOptions{FailFast: true, Timeout: 5 * time.Second})
		require.NoError(t, err)
		require.Equal(t, "back", text(t, res))
		st, err := m.Status("demo")
		require.NoError(t, err)
		require.Equal(t, time.Now(), st.ConnectedAt, "served by the new session, the moment it connected")
		require.Positive(t, time.Since(start), "it waited for the reconnect")
	})
}
