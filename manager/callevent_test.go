package manager_test

import (
	"context"
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

		// A failed call is published: the log shows it at WARN.
		_, err = m.Call(ctx, "demo.echo", "not an object", manager.CallOptions{})
		require.Error(t, err)
		calls := toolCalls(bus)
		require.Len(t, calls, 1)
		require.Equal(t, string(manager.CodeInvalidArguments), calls[0].Text("code"))

		// A subscriber asking for tool calls (a Lua hook on tool_call) gets
		// every one, and so does the passive one.
		passive.SetPassive()
		_, err = m.Call(ctx, "demo.echo", map[string]any{"text": "hi"}, manager.CallOptions{})
		require.NoError(t, err)
		calls = toolCalls(bus)
		require.Len(t, calls, 2)
		require.Equal(t, "echo", calls[1].Text("tool"))
		require.Empty(t, calls[1].Text("error"))
	})
}
