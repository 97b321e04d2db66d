package luaapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A call its chunk's caller cancelled (Ctrl-C at the REPL) shows in
// mcp_metrics as cancelled: not a protocol error, and not in the latency.
func TestMetricsCountCancelledCalls(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.addDemo(t, "demo")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Exec(ctx, `mcp_call("demo.sleep", {ms = 60000})`, "test")
		done <- err
	}()
	require.Eventually(t, func() bool {
		m, err := r.m.Metrics("demo")
		return err == nil && m.InFlight == 1
	}, 10*time.Second, time.Millisecond, "the call reaches the server")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { // the call's end is recorded as the chunk ends
		m, err := r.m.Metrics("demo")
		return err == nil && m.InFlight == 0
	}, 10*time.Second, time.Millisecond)

	require.Equal(t, "1 0 0 0", r.one(t, `local e = mcp_metrics("demo").errors
		return e.cancelled .. " " .. e.protocol .. " " .. e.total .. " " .. mcp_metrics("demo").latency_ms`))
}
