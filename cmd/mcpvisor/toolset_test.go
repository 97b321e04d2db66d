package main

// The gateway and the Lua runtime wired as the host wires them, with a
// toolset whose Lua function does not answer: the gateway never waits for
// it. In a synctest bubble, so that "at once" is exact.

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/internal/testutil"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// bubbleHost is a manager serving one in-process server, the Lua runtime
// and the gateway between them, all stopped when the test ends.
type bubbleHost struct {
	h  *host
	rt *luaapi.Runtime
}

func newBubbleHost(t *testing.T, up *mcp.Server) *bubbleHost {
	m := manager.New(manager.Options{Dial: func(ctx context.Context, _ string, _ manager.Spec) (mcp.Transport, error) {
		return (&testutil.InProcess{Server: up}).Dial(ctx)
	}})
	h := &host{mgr: m, log: slog.New(slog.DiscardHandler)}
	h.gateway.h = h
	rt, err := luaapi.New(luaapi.Options{Manager: m, Stdout: io.Discard, MemoryLimit: -1, Gateway: gatewayAPI{&h.gateway}})
	require.NoError(t, err)
	t.Cleanup(func() {
		rt.Close()
		h.gateway.close()
		require.NoError(t, m.Close(context.Background()))
	})
	return &bubbleHost{h: h, rt: rt}
}

// client connects an MCP client to the gateway's endpoint of toolset ("" for
// /mcp) over pipes, as `mcpvisor serve` does over stdio.
func (b *bubbleHost) client(t *testing.T, toolset string) *mcp.ClientSession {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.h.gateway.get().ServeStdio(ctx, inR, outW, "", toolset) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-served
	})
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func addBubbleTool(s *mcp.Server, name string) {
	s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
}

// A toolset function that sleeps instead of answering delays none of the
// gateway's list updates: each new tool is on /mcp well before the
// function's answer is due, however many come; the toolset keeps what it
// had, and leaves out what the function never answered for.
func TestToolsetFunctionNeverDelaysTheGateway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "v0"}, nil)
		addBubbleTool(up, "one")
		b := newBubbleHost(t, up)
		_, err := b.rt.LoadConfigSource(context.Background(), "startup.lua", `
			mcp_add("up", {command = {"up"}})
			mcp_toolset("slow", function(tool)
			  if tool.tool ~= "one" then sleep(3600) end
			  return true
			end)`)
		require.NoError(t, err)
		_, err = b.rt.Exec(context.Background(), `assert(mcp_wait("up", "connected"))`, "test")
		require.NoError(t, err)
		all, slow := b.client(t, ""), b.client(t, "slow")
		synctest.Wait()
		require.Equal(t, []string{"up__one"}, toolNames(t, all))
		require.Equal(t, []string{"up__one"}, toolNames(t, slow))

		start := time.Now()
		for _, name := range []string{"two", "three", "four"} {
			addBubbleTool(up, name)
			time.Sleep(luaapi.FilterTimeout / 4)
			synctest.Wait()
			require.Contains(t, toolNames(t, all), "up__"+name, "after %v", time.Since(start))
			require.Equal(t, []string{"up__one"}, toolNames(t, slow), "the function has not answered for the others")
		}
		time.Sleep(2 * luaapi.FilterTimeout)
		synctest.Wait()
		require.Equal(t, []string{"up__four", "up__one", "up__three", "up__two"}, toolNames(t, all))
		require.Equal(t, []string{"up__one"}, toolNames(t, slow), "what the function never answered for is left out")
	})
}
