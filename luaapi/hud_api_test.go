package luaapi_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/config"
)

// fakeHUD records what mcp_hud asked for.
type fakeHUD struct {
	mu sync.Mutex
	// mu guards the following.
	on  bool
	err error
}

func (f *fakeHUD) SetEnabled(on bool) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return false, f.err
	}
	was := f.on
	f.on = on
	return was, nil
}

// mcp_hud switches the display it is given and returns the previous
// setting; the display's failure comes back as nil, why.
func TestHUDLuaSwitch(t *testing.T) {
	h := &fakeHUD{}
	r := newTestRuntime(t, nil, func(o *luaapi.Options) { o.HUD = h })
	require.Equal(t, []string{"false"}, r.run(t, "return mcp_hud(true)"))
	require.Equal(t, []string{"true"}, r.run(t, "return mcp_hud(true)"))
	require.Equal(t, []string{"true"}, r.run(t, "return mcp_hud(false)"))
	require.False(t, h.on)

	h.mu.Lock()
	h.err = errors.New("the REPL has ended")
	h.mu.Unlock()
	require.Equal(t, []string{"nil", "mcp_hud: the REPL has ended"}, r.run(t, "return mcp_hud(true)"))

	le := r.fail(t, "return mcp_hud()")
	require.Contains(t, le.Message, "true or false expected, got nil")
}

// A server in backoff shows its countdown, next attempt and error in
// mcp_hud_model; a server added before the runtime started is there too
// (the model starts from the bus's history).
func TestHUDLuaModelBackoffAndHistory(t *testing.T) {
	demoDial := inMemoryDemoDial(t)
	dial := func(ctx context.Context, server string, spec manager.Spec) (mcp.Transport, error) {
		if server == "broken" {
			return nil, errors.New("no such program")
		}
		return demoDial(ctx, server, spec)
	}
	m := manager.New(manager.Options{Dial: dial})
	sub := m.Bus().Subscribe(events.SubscribeOptions{})
	defer sub.Close()
	// Declared before the runtime exists, and connected.
	spec, err := config.DecodeSpec("early", map[string]any{"command": []any{"demo-server"}}, config.DecodeOptions{})
	require.NoError(t, err)
	require.NoError(t, m.Add("early", spec))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = m.Wait(ctx, "early", manager.StateConnected)
	require.NoError(t, err)
	for e, err := sub.Recv(ctx); e.Kind != events.KindConnected; e, err = sub.Recv(ctx) {
		require.NoError(t, err) // the connected event is out, so the history has it
	}

	t.Cleanup(func() { // after the runtime's own cleanup
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, m.Close(ctx))
	})
	r := newTestRuntimeWith(t, manager.Options{}, func(o *luaapi.Options) {
		o.Manager = m
		o.ScriptDir = scriptsDir
	})
	require.Equal(t, []string{"early", "connected", "4"}, r.run(t, `
		local row = mcp_hud_model()[1]
		return row.name, row.state, row.tools`))

	got := r.run(t, `
		mcp_add("broken", {command = {"nope"}, backoff = {initial = "30s", max = "30s", jitter = 0}})
		local row
		require("testlib").eventually(function()
			for _, r in ipairs(mcp_hud_model()) do
				if r.name == "broken" and r.state == "backoff" then row = r return true end
			end
		end, "broken in backoff")
		return row.glyph, row.attempt, row.retry_in > 25 and row.retry_in <= 30, row.error`)
	require.Equal(t, "↻", got[0])
	require.Equal(t, "2", got[1], "the attempt the retry will make")
	require.Equal(t, "true", got[2], "retry_in counts down from 30s")
	require.Contains(t, got[3], "no such program")
}

// Tab completes the HUD's functions like every other global.
func TestHUDLuaComplete(t *testing.T) {
	r := newTestRuntime(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	suffixes, length := r.Complete(ctx, "mcp_hu", len("mcp_hu"))
	require.Equal(t, []string{"d", "d_model"}, suffixes)
	require.Equal(t, len("mcp_hu"), length)
}

// Under --max-connections, a server waiting for a slot says so in
// mcp_status and in its HUD row, and connects once the holder is removed.
func TestLuaWaitingForSlot(t *testing.T) {
	r := newTestRuntimeWith(t, manager.Options{Dial: inMemoryDemoDial(t), MaxConnections: 1},
		func(o *luaapi.Options) { o.ScriptDir = scriptsDir })
	r.addDemo(t, "first")
	got := r.run(t, `
		mcp_add("second", {command = {"demo"}})
		local row
		require("testlib").eventually(function()
			for _, r in ipairs(mcp_hud_model()) do
				if r.name == "second" and r.waiting then row = r return true end
			end
		end, "second waiting in the HUD")
		local st = mcp_status("second")
		return st.state, st.waiting, row.state, row.waiting`)
	require.Equal(t, []string{"connecting", "max connections (1) reached", "connecting", "max connections (1) reached"}, got)

	got = r.run(t, `
		mcp_remove("first", {wait = true})
		local ok, why = mcp_wait("second", "connected")
		assert(ok, why)
		return mcp_status("second").waiting`)
	require.Equal(t, []string{"nil"}, got, "no waiting note once connected")
}
