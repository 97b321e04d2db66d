package luaapi

import (
	"sort"

	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/manager"
)

// Lifecycle switches declared servers: mcp_reconnect, mcp_enable and
// mcp_disable. Its methods are called on the loop and must return at once.
type Lifecycle interface {
	Reconnect(name string) error
	Enable(name string) error
	Disable(name string) error
}

// Meter reports the counters mcp_metrics shows. Its methods are called on
// the loop and must return at once.
type Meter interface {
	Metrics(name string) (manager.Metrics, error)
	PoolMetrics() manager.PoolMetrics
}

// mcp_reconnect(name) → true | nil, err: reset backoff and breaker, try now.
func (r *Runtime) luaReconnect(L *lua.LState) int {
	return r.lifecycleOp(L, "mcp_reconnect", r.lifecycle.Reconnect)
}

// mcp_enable(name) → true | nil, err: connect a disabled server.
func (r *Runtime) luaEnable(L *lua.LState) int {
	return r.lifecycleOp(L, "mcp_enable", r.lifecycle.Enable)
}

// mcp_disable(name) → true | nil, err: close it and keep it down.
func (r *Runtime) luaDisable(L *lua.LState) int {
	return r.lifecycleOp(L, "mcp_disable", r.lifecycle.Disable)
}

func (r *Runtime) lifecycleOp(L *lua.LState, fn string, op func(string) error) int {
	name := checkString(L, fn, 1)
	if err := op(name); err != nil {
		return pushErr(L, err)
	}
	L.Push(lua.LTrue)
	return 1
}

// mcp_metrics([name]) → table | nil, err: one server's counters, or the
// pool totals with every server's under `servers`.
func (r *Runtime) luaMetrics(L *lua.LState) int {
	if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
		met, err := r.meter.Metrics(checkString(L, "mcp_metrics", 1))
		if err != nil {
			return pushErr(L, err)
		}
		L.Push(metricsTable(L, met))
		return 1
	}
	pool := r.meter.PoolMetrics()
	t := L.NewTable()
	t.RawSetString("servers_total", lua.LNumber(pool.Servers))
	t.RawSetString("requests", lua.LNumber(pool.Requests))
	t.RawSetString("errors", errorCountsTable(L, pool.Errors))
	t.RawSetString("in_flight", lua.LNumber(pool.InFlight))
	t.RawSetString("reconnects", lua.LNumber(pool.Reconnects))
	states := L.NewTable()
	keys := make([]manager.State, 0, len(pool.ByState))
	for st := range pool.ByState {
		keys = append(keys, st)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, st := range keys {
		states.RawSetString(st.String(), lua.LNumber(pool.ByState[st]))
	}
	t.RawSetString("by_state", states)
	servers := L.NewTable()
	for _, name := range r.observer.Names() {
		if met, err := r.meter.Metrics(name); err == nil {
			servers.RawSetString(name, metricsTable(L, met))
		}
	}
	t.RawSetString("servers", servers)
	L.Push(t)
	return 1
}

func metricsTable(L *lua.LState, m manager.Metrics) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("server", lua.LString(m.Server))
	t.RawSetString("state", lua.LString(m.State.String()))
	t.RawSetString("circuit", lua.LString(m.Circuit.String()))
	t.RawSetString("connected_for", lua.LNumber(m.ConnectedFor.Seconds()))
	t.RawSetString("requests", lua.LNumber(m.Requests))
	t.RawSetString("errors", errorCountsTable(L, m.Errors))
	t.RawSetString("latency_ms", lua.LNumber(float64(m.Latency.Microseconds())/1000))
	setTime(t, "last_activity", m.LastActivity)
	t.RawSetString("in_flight", lua.LNumber(m.InFlight))
	t.RawSetString("reconnects", lua.LNumber(m.Reconnects))
	if m.Sessions != nil {
		t.RawSetString("sessions", sessionsTable(L, m.Sessions))
	}
	return t
}

func errorCountsTable(L *lua.LState, e manager.ErrorCounts) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("timeout", lua.LNumber(e.Timeout))
	t.RawSetString("disconnect", lua.LNumber(e.Disconnect))
	t.RawSetString("protocol", lua.LNumber(e.Protocol))
	t.RawSetString("tool", lua.LNumber(e.Tool))
	t.RawSetString("cancelled", lua.LNumber(e.Cancelled))
	t.RawSetString("total", lua.LNumber(e.Total()))
	return t
}
