package main

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
)

// The log asks for tool calls only when it logs DEBUG, where a call that
// went well is logged; otherwise such a call is not even published for it,
// and the failed ones it logs at WARN still reach it.
func TestLogAsksForToolCallsOnlyAtDebug(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		asks  bool
	}{{slog.LevelDebug, true}, {slog.LevelInfo, false}, {slog.LevelWarn, false}} {
		var out bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: tc.level}))
		bus := events.NewBus(events.Options{})
		sub := bus.Subscribe(events.SubscribeOptions{Passive: logPassive(logger)})
		require.Equal(t, tc.asks, bus.Wants(events.KindToolCall), "at %s", tc.level)

		// A failed call, published whoever asks, is logged at WARN.
		bus.Emit("demo", "", manager.ToolCall{Tool: "echo", Error: "boom", Code: manager.CodeInvocationFailed})
		bus.Close()
		logEvents(sub, logger, "")
		require.Contains(t, out.String(), `msg="tool call failed"`, "at %s", tc.level)
		sub.Close()
	}
}
