package gateway

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager/notify"
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
		src.notes.Publish(context.Background(), notify.LogMessage{Origin: notify.Origin{Server: "git"}, Level: level, Logger: "core", Data: msg})
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
	src.notes.Publish(context.Background(), notify.LogMessage{Origin: notify.Origin{Server: "fs"}, Level: "debug", Data: "fs speaking"})
	select {
	case got := <-other.logs:
		require.Equal(t, "fs speaking", got.Data, "another server's client got git's log")
		require.Equal(t, "fs", got.Logger)
	case <-time.After(5 * time.Second):
		t.Fatal("fs's log message never reached its client")
	}
}

// A log message from a client's own session of a per-client server is that
// client's: no other client sees it.
func TestClientSessionLogsStayWithTheirClient(t *testing.T) {
	src := newFakeSource(t)
	src.set("pc", stdio, "whoami")
	g := newGateway(t, src)
	mine, theirs := connect(t, g, everything, ""), connect(t, g, everything, "")
	for _, c := range []*client{mine, theirs} {
		require.NoError(t, c.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}))
	}
	label := g.clients.labelOf(mine.server)
	require.NotEmpty(t, label)
	say := func(data, client string) {
		src.notes.Publish(context.Background(), notify.LogMessage{Origin: notify.Origin{Server: "pc", Client: client}, Level: "info", Data: data})
	}
	say("mine only", label)
	say("everyone", "")
	next := func(c *client) any {
		select {
		case got := <-c.logs:
			return got.Data
		case <-time.After(5 * time.Second):
			t.Fatal("no log message came")
			return nil
		}
	}
	require.Equal(t, "mine only", next(mine))
	require.Equal(t, "everyone", next(mine))
	// In order: the shared message came after the private one, so the other
	// client would have had that first.
	require.Equal(t, "everyone", next(theirs), "another client's session's log reached this client")
}

// What the gateway's queue could not take is made up for: a client
// subscribed to a resource of that server is told it was updated (it may
// have been), and told how many log messages it missed.
func TestLostNoticesAreMadeUpFor(t *testing.T) {
	src := newFakeSource(t)
	src.set("git", stdio, "status")
	g := newGateway(t, src)
	c := connect(t, g, oneServer, "git")
	require.NoError(t, c.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}))
	require.NoError(t, c.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "git://log"}))
	require.Eventually(t, func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return slices.Contains(src.subs, "+git git://log")
	}, 10*time.Second, time.Millisecond, "subscribed upstream")

	src.notes.Publish(context.Background(), notify.Lost{Origin: notify.Origin{Server: "git"}, ResourceUpdates: 3, LogMessages: 2})
	select {
	case uri := <-c.updates:
		require.Equal(t, "git://log", uri)
	case <-time.After(5 * time.Second):
		t.Fatal("the subscribed resource was not sent as updated")
	}
	select {
	case got := <-c.logs:
		require.Equal(t, mcp.LoggingLevel("warning"), got.Level)
		require.Equal(t, "2 log messages of git were not delivered: the gateway fell behind", got.Data)
	case <-time.After(5 * time.Second):
		t.Fatal("the client was not told of the log messages it missed")
	}
}

// A client's own session connecting or changing changes no list: the
// gateway does not list the servers again for it (it would, for every
// client's every session, on a busy per-client server).
func TestClientSessionEventsDoNotRelist(t *testing.T) {
	var g *Gateway // these kinds are told apart without the gateway's state
	relists := func(e events.Event) bool { return g.change(e) != listsSame }
	for _, k := range []events.Kind{events.KindConnected, events.KindToolsChanged, events.KindRemoved} {
		require.True(t, relists(events.Event{Kind: k, Server: "pc"}), "%s of the server", k)
		require.False(t, relists(events.Event{Kind: k, Server: "pc", Fields: events.Fields{"client": "someone (1)"}}), "%s of a client's session", k)
	}
	require.False(t, relists(events.Event{Kind: events.KindToolCall, Server: "pc"}))
}
