package manager_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/internal/fakemcp/fakemcptest"
	"github.com/mcpvisor/mcpvisor/manager"
)

// A raw call is a call like any other for the manager: it reaches the
// server under an id of the raw path's, its result comes back as the
// server wrote it, it is counted and published with its client, and the
// manager's checks refuse what Call refuses without sending it. What the
// raw path does not make is left to Call, untouched.
func TestCallRawIsACallForTheManager(t *testing.T) {
	m, tl := procManager(t)
	record := filepath.Join(t.TempDir(), "record")
	require.NoError(t, m.Add("f", decode(t, map[string]any{"command": []any{fakemcptest.Build(t), "--record=" + record}})))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := m.Wait(ctx, "f", manager.StateConnected)
	require.NoError(t, err)
	opts := manager.CallOptions{Client: "client-1"}

	res, err := m.CallRaw(ctx, "f", "echo", json.RawMessage("{\n \"text\": \"hi\"\n}"), json.RawMessage(`{"k":"v"}`), opts)
	require.NoError(t, err)
	require.JSONEq(t, `{"content":[{"type":"text","text":"hi"}],"isError":false}`, string(res))
	call := tl.until("f", events.KindToolCall, 10*time.Second)
	last := call[len(call)-1]
	require.Equal(t, "echo", last.Fields["tool"])
	require.Equal(t, "client-1", last.Fields["client"])
	lines, err := os.ReadFile(record)
	require.NoError(t, err)
	require.Contains(t, string(lines), `tools/call id="mcpvisor-raw-1"`, "sent on the raw path, on one line")

	_, err = m.CallRaw(ctx, "f", "echo", json.RawMessage(`{"text":5}`), nil, opts)
	require.ErrorIs(t, err, manager.ErrInvalidArguments)
	_, err = m.CallRaw(ctx, "f", "nope", nil, nil, opts)
	require.ErrorIs(t, err, manager.ErrToolNotFound)
	mt, err := m.Metrics("f")
	require.NoError(t, err)
	require.EqualValues(t, 1, mt.Requests, "the refused calls never reached the server")

	_, err = m.CallRaw(ctx, "nosuch", "echo", nil, nil, opts)
	_, callErr := m.Call(ctx, "nosuch.echo", nil, opts)
	require.Error(t, callErr)
	require.EqualError(t, err, callErr.Error(), "an unknown server is refused as Call refuses it")
}
