package luaapi

import (
	"time"

	"github.com/mcpvisor/mcpvisor/events/hud"
	lua "github.com/yuin/gopher-lua"
)

// HUD is the terminal status display that mcp_hud switches on and off; the
// command implements it. SetEnabled is called on the Lua loop and must
// return at once (post the change to the display's own goroutine).
type HUD interface {
	// SetEnabled shows (true) or hides the display and reports whether it
	// was shown before.
	SetEnabled(on bool) (was bool, err error)
}

// errNoTerminal is mcp_hud's answer when there is no display to switch.
const errNoTerminal = "mcp_hud: no terminal: the HUD is drawn only when stdout is a terminal and mcpvisor runs without -e"

// mcp_hud(on) → the previous setting | nil, why. Shows or hides the live
// status block at the top of the terminal.
func (r *Runtime) luaHUD(L *lua.LState) int {
	on, ok := L.Get(1).(lua.LBool)
	if !ok {
		L.ArgError(1, "true or false expected, got "+L.Get(1).Type().String())
	}
	if r.opts.HUD == nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(errNoTerminal))
		return 2
	}
	was, err := r.opts.HUD.SetEnabled(bool(on))
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("mcp_hud: " + err.Error()))
		return 2
	}
	L.Push(lua.LBool(was))
	return 1
}

// mcp_hud_model() → list of rows, as the HUD shows them now, sorted by
// name: {name, state, glyph, transport, tools, latency_ms, calls,
// failed_calls, retry_in, attempt, circuit, probe, probe_in, error, waiting,
// sessions (a per-client server's clients' sessions)}, the
// optional ones absent when they do not apply. The model follows the events
// the loop has handled, so a server added in the same chunk appears once
// its added event has gone through the loop; calls, failed_calls and
// latency_ms are the manager's metrics as they are now.
func (r *Runtime) luaHUDModel(L *lua.LState) int {
	r.hud.UpdateMetrics(r.meter.Metrics)
	rows := r.hud.View(time.Now())
	items := make([]lua.LValue, len(rows))
	for i, row := range rows {
		items[i] = hudRowTable(L, row)
	}
	L.Push(listTable(L, items))
	return 1
}

func hudRowTable(L *lua.LState, row hud.Row) *lua.LTable {
	t := L.CreateTable(0, 14)
	t.RawSetString("name", lua.LString(row.Name))
	t.RawSetString("state", lua.LString(row.State))
	t.RawSetString("glyph", lua.LString(row.Glyph))
	setString(t, "transport", row.Transport)
	t.RawSetString("tools", lua.LNumber(row.Tools))
	t.RawSetString("calls", lua.LNumber(row.Calls))
	t.RawSetString("failed_calls", lua.LNumber(row.FailedCalls))
	if row.Calls > 0 {
		t.RawSetString("latency_ms", lua.LNumber(float64(row.Latency)/float64(time.Millisecond)))
	}
	if row.Attempt > 0 {
		t.RawSetString("attempt", lua.LNumber(row.Attempt))
	}
	if row.State == hud.StateBackoff {
		t.RawSetString("retry_in", lua.LNumber(row.RetryIn.Seconds()))
	}
	t.RawSetString("circuit", lua.LString(row.Circuit))
	if row.Probe {
		t.RawSetString("probe", lua.LTrue)
	}
	if row.State == hud.StateOpen {
		t.RawSetString("probe_in", lua.LNumber(row.ProbeIn.Seconds()))
	}
	setString(t, "error", row.Error)
	setString(t, "waiting", row.Waiting)
	if row.Sessions > 0 {
		t.RawSetString("sessions", lua.LNumber(row.Sessions))
	}
	return t
}
