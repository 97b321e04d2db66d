package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
)

func TestLevelOf(t *testing.T) {
	tests := []struct {
		kind events.Kind
		want slog.Level
	}{
		{events.KindAdded, slog.LevelInfo},
		{events.KindRemoved, slog.LevelInfo},
		{events.KindConnecting, slog.LevelInfo},
		{events.KindConnected, slog.LevelInfo},
		{events.KindCircuit, slog.LevelInfo},
		{events.KindIdle, slog.LevelInfo},
		{events.KindSessionReinitialized, slog.LevelInfo},
		{events.KindToolsChanged, slog.LevelInfo},
		{events.KindResourcesChanged, slog.LevelInfo},
		{events.KindPromptsChanged, slog.LevelInfo},
		{events.KindConfigApplied, slog.LevelInfo},
		{events.KindDisconnected, slog.LevelWarn},
		{events.KindBackoff, slog.LevelWarn},
		{events.KindHealthFailed, slog.LevelWarn},
		{events.KindHookError, slog.LevelWarn},
		{events.KindLagged, slog.LevelWarn},
		{events.KindFailed, slog.LevelError},
		{events.KindConfigError, slog.LevelError},
		{events.KindNotification, slog.LevelDebug},
		{events.KindToolCall, slog.LevelDebug},
		{events.KindClosing, slog.LevelInfo},
		{events.KindDisabled, slog.LevelInfo},
		{events.KindHealthUnsupported, slog.LevelInfo},
		{events.Kind("unknown"), slog.LevelDebug},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			require.Equal(t, tt.want, events.LevelOf(tt.kind))
		})
	}
}

func TestLogToolCallLevels(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx := context.Background()
	events.LogEvent(ctx, logger, events.Event{Seq: 1, Kind: events.KindToolCall, Server: "git",
		Fields: events.Fields{"tool": "status", "duration_ms": 3}})
	events.LogEvent(ctx, logger, events.Event{Seq: 2, Kind: events.KindToolCall, Server: "git",
		Fields: events.Fields{"tool": "status", "duration_ms": 1000, "code": "INVOCATION_FAILED", "error": "timeout after 1s"}})
	events.LogEvent(ctx, logger, events.Event{Seq: 3, Kind: events.KindToolCall, Server: "git",
		Fields: events.Fields{"tool": "status", "duration_ms": 1000, "code": "INVOCATION_FAILED", "error": "cancelled: context canceled", "cancelled": true}})
	got := decodeJSONLines(t, buf.Bytes())
	require.Len(t, got, 3)
	require.Equal(t, "DEBUG", got[0]["level"])
	require.Equal(t, "tool call finished", got[0]["msg"])
	require.Equal(t, "WARN", got[1]["level"])
	require.Equal(t, "tool call failed", got[1]["msg"])
	require.Equal(t, "INFO", got[2]["level"], "the caller gave up: nothing went wrong")
	require.Equal(t, "tool call cancelled", got[2]["msg"])
}

// decodeJSONLines parses a JSON handler's output, dropping the time attribute.
func decodeJSONLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "line %q", line)
		delete(m, "time")
		out = append(out, m)
	}
	return out
}

func TestLogWritesEventsAtTheirLevels(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	bus := events.NewBus(events.Options{QueueSize: 100})
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()

	done := make(chan error, 1)
	go func() { done <- events.Log(context.Background(), sub, logger) }()

	bus.Publish(events.KindConnected, "git", events.Fields{"attempt": 1, "tools": 12, "protocol": "2025-06-18"})
	bus.Publish(events.KindNotification, "git", events.Fields{"method": "notifications/message"})
	bus.Publish(events.KindBackoff, "git", events.Fields{"attempt": 3, "delay_ms": 400, "error": "exit status 3"})
	bus.Publish(events.KindConfigApplied, "", events.Fields{"file": "mcp.lua", "added": []string{"fs"}})
	bus.Publish(events.KindFailed, "web", events.Fields{"attempts": 5, "error": "circuit open"})
	bus.Close()
	require.NoError(t, <-done, "Log returns nil once the bus is closed")

	want := []map[string]any{
		{"level": "INFO", "msg": "server connected", "seq": 1.0, "server": "git", "kind": "connected",
			"attempt": 1.0, "protocol": "2025-06-18", "tools": 12.0},
		// seq 2, the notification, is DEBUG and filtered out at INFO.
		{"level": "WARN", "msg": "backing off, will retry", "seq": 3.0, "server": "git", "kind": "backoff",
			"attempt": 3.0, "delay_ms": 400.0, "error": "exit status 3"},
		{"level": "INFO", "msg": "config applied", "seq": 4.0, "kind": "config_applied",
			"added": []any{"fs"}, "file": "mcp.lua"},
		{"level": "ERROR", "msg": "server failed, giving up", "seq": 5.0, "server": "web", "kind": "failed",
			"attempts": 5.0, "error": "circuit open"},
	}
	require.Equal(t, want, decodeJSONLines(t, buf.Bytes()))
}

func TestLogDebugLevelIncludesNotifications(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bus := events.NewBus(events.Options{})
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	bus.Publish(events.KindNotification, "git", events.Fields{"method": "notifications/progress"})
	bus.Close()
	require.NoError(t, events.Log(context.Background(), sub, logger))
	require.Equal(t, []map[string]any{
		{"level": "DEBUG", "msg": "server notification", "seq": 1.0, "server": "git", "kind": "notification",
			"method": "notifications/progress"},
	}, decodeJSONLines(t, buf.Bytes()))
}

// A log subscriber that fell behind logs the lag at WARN, with the count.
func TestLogReportsLag(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	bus := events.NewBus(events.Options{QueueSize: 2})
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	for range 5 {
		bus.Publish(events.KindIdle, "git", nil)
	}
	bus.Close()
	require.NoError(t, events.Log(context.Background(), sub, logger))
	require.Equal(t, []map[string]any{
		{"level": "WARN", "msg": "log subscriber fell behind, events missed", "kind": "lagged", "missed": 3.0},
		{"level": "INFO", "msg": "server idle, no session until the next call", "seq": 4.0, "server": "git", "kind": "idle"},
		{"level": "INFO", "msg": "server idle, no session until the next call", "seq": 5.0, "server": "git", "kind": "idle"},
	}, decodeJSONLines(t, buf.Bytes()))
}

func TestLogReturnsContextError(t *testing.T) {
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- events.Log(ctx, sub, slog.New(slog.DiscardHandler)) }()
	bus.Publish(events.KindAdded, "git", nil)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestLogAfterSubscriptionClose(t *testing.T) {
	bus := events.NewBus(events.Options{})
	defer bus.Close()
	sub := bus.Subscribe(events.SubscribeOptions{})
	sub.Close()
	require.NoError(t, events.Log(context.Background(), sub, slog.New(slog.DiscardHandler)))
}

// The text log shows what a server put in an event (its error, its stderr,
// a tool's name) quoted, with escape sequences, C1 controls, bidi overrides
// and zero-width characters written out: slog's text handler quotes any
// value that holds a character that is not printable. The JSON log is
// escaped by JSON itself.
func TestTextLogEscapesServerText(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	evil := "A\x1b]0;PWNED\x07\x1b[2JB\u009b\u202e\u200b\ufeff"
	events.LogEvent(context.Background(), logger, events.Event{Seq: 1, Kind: events.KindDisconnected, Server: "evil",
		Fields: events.Fields{"error": evil, "stderr": []string{evil}, "cause": errors.New(evil)}})
	line := buf.String()
	require.Equal(t, 1, strings.Count(line, "\n"), "one line: %q", line)
	require.False(t, strings.ContainsFunc(strings.TrimSuffix(line, "\n"), func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}), "%q", line)
	require.Contains(t, line, `error="A\x1b]0;PWNED\a\x1b[2JB\u009b\u202e\u200b\ufeff"`)
	require.Contains(t, line, `cause="A\x1b]0;PWNED`)
	require.Contains(t, line, `stderr="[A\x1b]0;PWNED`)
}
