package manager_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// toolCalls returns the tool_call events in the bus's history.
func toolCalls(bus *events.Bus) []events.Event {
	var out []events.Event
	for _, e := range bus.History(0) {
		if e.Kind == events.KindToolCall {
			out = append(out, e)
		}
	}
	return out
}

// A call's event is published when a subscriber asks for tool calls, or
// when the call failed; a call that went well, with only subscribers that
// take tool calls passively (the log at INFO, the HUD), publishes nothing
// and wakes nobody. Its metrics count it all the same.
func TestToolCallEventOnlyWhenAskedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t)
		bus := m.Bus()
		passive := bus.Subscribe(events.SubscribeOptions{Passive: []events.Kind{events.KindToolCall}})
		defer passive.Close()
		require.False(t, bus.Wants(events.KindToolCall))
		ctx := context.Background()
		for range 3 {
			_, err := m.Call(ctx, "demo.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
			require.NoError(t, err)
		}
		require.Empty(t, toolCalls(bus), "successful calls nobody asks for are not published")
		metrics, err := m.Metrics("demo")
		require.NoError(t, err)
		require.EqualValues(t, 3, metrics.Requests, "the metrics count them")

		// The server's recent calls keep them, published or not.
		recent, err := m.RecentCalls("demo")
		require.NoError(t, err)
		require.Len(t, recent, 3)
		require.Equal(t, "echo", recent[0].Tool)

		// A failed call is published (the log shows it at WARN), and so is
		// a tool's error result.
		_, err = m.Call(ctx, "demo.echo", "not an object", manager.CallOptions{})
		require.Error(t, err)
		_, err = m.Call(ctx, "demo.fail", map[string]any{"message": "no"}, manager.CallOptions{})
		require.NoError(t, err)
		calls := toolCalls(bus)
		require.Len(t, calls, 2)
		require.Equal(t, string(manager.CodeInvalidArguments), calls[0].Text("code"))
		require.Equal(t, true, calls[1].Fields["is_error"])

		// A subscriber asking for tool calls (a Lua hook on tool_call) gets
		// every one, and so does the passive one.
		passive.SetPassive()
		_, err = m.Call(ctx, "demo.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
		require.NoError(t, err)
		calls = toolCalls(bus)
		require.Len(t, calls, 3)
		require.Equal(t, "echo", calls[2].Text("tool"))
		require.Empty(t, calls[2].Text("error"))
	})
}

// A server keeps its last 20 calls, the newest first, with their outcome.
func TestRecentCallsNewestFirstAndBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := twoServers(t)
		ctx := context.Background()
		for i := range 25 {
			_, err := m.Call(ctx, "demo.echo", map[string]any{"text": fmt.Sprint(i)}, manager.CallOptions{})
			require.NoError(t, err)
		}
		_, err := m.Call(ctx, "demo.nope", nil, manager.CallOptions{})
		require.Error(t, err)
		recent, err := m.RecentCalls("demo")
		require.NoError(t, err)
		require.Len(t, recent, 20)
		require.Equal(t, "nope", recent[0].Tool)
		require.Equal(t, manager.CodeToolNotFound, recent[0].Code)
		require.Equal(t, "echo", recent[19].Tool)
		other, err := m.RecentCalls("other")
		require.NoError(t, err)
		require.Empty(t, other)
		_, err = m.RecentCalls("missing")
		require.ErrorIs(t, err, manager.ErrServerNotFound)
	})
}
