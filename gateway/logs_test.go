package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
)

// A server's log messages reach the clients that serve it, named by
// server, each at or above the level the client set; the clients of
// another server's endpoint see none.
func TestServerLogsFollowEachClientsLevel(t *testing.T) {
	src := newFakeSource(t)
	src.set("git", stdio, "status")
	src.set("fs", stdio, "read")
	g := newGateway(t, src)
	all := connect(t, g, everything, "")
	other := connect(t, g, oneServer, "fs")
	logf := func(level, msg string) {
		src.bus.Publish(events.KindNotification, "git", events.Fields{"method": "notifications/message",
			"params": map[string]any{"level": level, "logger": "core", "data": msg}})
	}

	require.NoError(t, all.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "warning"}))
	require.NoError(t, other.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}))
	logf("info", "below the level")
	logf("error", "disk full")

	select {
	case got := <-all.logs:
		require.Equal(t, mcp.LoggingLevel("error"), got.Level)
		require.Equal(t, "git/core", got.Logger)
		require.Equal(t, "disk full", got.Data)
	case <-time.After(5 * time.Second):
		t.Fatal("the error log message never reached the client")
	}
	require.Empty(t, all.logs, "a message below the client's level was sent")
	// Messages are delivered in order: once fs's own message has reached
	// its client, git's would have been there before it.
	src.bus.Publish(events.KindNotification, "fs", events.Fields{"method": "notifications/message",
		"params": map[string]any{"level": "debug", "data": "fs speaking"}})
	select {
	case got := <-other.logs:
		require.Equal(t, "fs speaking", got.Data, "another server's client got git's log")
		require.Equal(t, "fs", got.Logger)
	case <-time.After(5 * time.Second):
		t.Fatal("fs's log message never reached its client")
	}
}
