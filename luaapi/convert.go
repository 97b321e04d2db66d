package luaapi

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/events"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"
)

// Plain data crosses into Lua as tables, never as gopher-luar userdata:
// scripts can iterate, print and json.encode it.

func statusTable(L *lua.LState, st manager.Status) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("name", lua.LString(st.Name))
	t.RawSetString("state", lua.LString(st.State.String()))
	t.RawSetString("transport", lua.LString(st.Transport))
	t.RawSetString("endpoint", lua.LString(st.Endpoint))
	t.RawSetString("attempts", lua.LNumber(st.Attempts))
	t.RawSetString("tools", lua.LNumber(st.Tools))
	t.RawSetString("resources", lua.LNumber(st.Resources))
	t.RawSetString("prompts", lua.LNumber(st.Prompts))
	setTime(t, "discovered_at", st.DiscoveredAt)
	setString(t, "last_error", st.LastError)
	setString(t, "remedy", remedyWords(st.Remedy))
	setString(t, "protocol", st.Protocol)
	setTime(t, "since", st.Since)
	setTime(t, "connected_at", st.ConnectedAt)
	if st.PID != 0 {
		t.RawSetString("pid", lua.LNumber(st.PID))
	}
	if !st.NextAttempt.IsZero() {
		t.RawSetString("next_attempt_in", lua.LNumber(math.Round(max(0, time.Until(st.NextAttempt).Seconds())*1000)/1000))
	}
	setString(t, "waiting", st.Waiting)
	t.RawSetString("circuit", lua.LString(st.Circuit.String()))
	t.RawSetString("healthy", lua.LBool(st.Healthy))
	if st.LastPing > 0 {
		t.RawSetString("last_ping_ms", lua.LNumber(float64(st.LastPing.Microseconds())/1000))
	}
	if st.PingUnsupported {
		t.RawSetString("ping_unsupported", lua.LTrue)
	}
	if st.HealthByDiscover {
		t.RawSetString("health_check", lua.LString("server/discover"))
	}
	if st.ServerName != "" || st.ServerVersion != "" {
		srv := L.NewTable()
		setString(srv, "name", st.ServerName)
		setString(srv, "version", st.ServerVersion)
		t.RawSetString("server", srv)
	}
	if st.Sessions != nil {
		t.RawSetString("sessions", sessionsTable(L, st.Sessions))
	}
	return t
}

// sessionsTable lists the client sessions of a per-client server.
func sessionsTable(L *lua.LState, list []manager.ClientSession) *lua.LTable {
	sessions := L.CreateTable(len(list), 0)
	for _, cs := range list {
		c := L.CreateTable(0, 4)
		c.RawSetString("client", lua.LString(cs.Client))
		c.RawSetString("state", lua.LString(cs.State.String()))
		setTime(c, "since", cs.Since)
		if cs.PID != 0 {
			c.RawSetString("pid", lua.LNumber(cs.PID))
		}
		sessions.Append(c)
	}
	return sessions
}

func toolTable(L *lua.LState, ti manager.ToolInfo) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("name", lua.LString(ti.FullName))
	t.RawSetString("server", lua.LString(ti.Server))
	t.RawSetString("tool", lua.LString(ti.Name))
	setString(t, "title", ti.Title)
	setString(t, "description", ti.Description)
	t.RawSetString("available", lua.LBool(ti.Available))
	if ti.Problem != "" {
		t.RawSetString("problem", lua.LString(ti.Problem))
	}
	if ti.InputSchema != nil {
		t.RawSetString("input_schema", ToLua(L, ti.InputSchema))
	}
	return t
}

// costedToolTable is toolTable with the tokens the tool's definition
// costs.
func costedToolTable(L *lua.LState, ti manager.ToolInfo, tokens int) *lua.LTable {
	t := toolTable(L, ti)
	t.RawSetString("tokens", lua.LNumber(tokens))
	return t
}

func eventTable(L *lua.LState, e events.Event) *lua.LTable {
	// Sized exactly: L.NewTable preallocates 32 slots and 32 keys, and an
	// event table is made for every event a hook sees.
	t := L.CreateTable(0, len(e.Fields)+4)
	for k, v := range e.Fields {
		t.RawSetString(k, ToLua(L, v))
	}
	t.RawSetString("seq", lua.LNumber(e.Seq))
	t.RawSetString("time", lua.LString(e.Time.Format(time.RFC3339Nano)))
	t.RawSetString("kind", lua.LString(e.Kind))
	setString(t, "server", e.Server)
	return t
}

// resultTable converts a tool result, isError=true included (that is a
// result, not an error): content kept as the server sent it, for partial
// output, structured content decoded, is_error a plain flag, text the
// joined text parts.
func resultTable(L *lua.LState, res *mcp.CallToolResult) *lua.LTable {
	t := L.CreateTable(0, 4)
	content := L.CreateTable(len(res.Content), 0)
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
			if tc.Meta == nil && tc.Annotations == nil {
				// The common case, built directly: the JSON round trip
				// below costs ~10µs a call.
				ct := L.CreateTable(0, 2)
				ct.RawSetString("type", lua.LString("text"))
				ct.RawSetString("text", lua.LString(tc.Text))
				content.Append(ct)
				continue
			}
		}
		raw, err := json.Marshal(c)
		if err != nil {
			raw, _ = json.Marshal(map[string]string{"type": "unknown", "error": err.Error()})
		}
		content.Append(ToLua(L, json.RawMessage(raw))) // big integers stay exact
	}
	content.Metatable = arrayMetatable(L)
	t.RawSetString("content", content)
	t.RawSetString("text", lua.LString(strings.Join(text, "\n")))
	t.RawSetString("is_error", lua.LBool(res.IsError))
	if res.StructuredContent != nil {
		t.RawSetString("structured", ToLua(L, res.StructuredContent))
	}
	return t
}

// errorTable is the `err` of `nil, err` returns: code, server, operation,
// message and, when one is known, remedy (what to call; the message ends
// with it too), and tostring(err) == "CODE: message".
func errorTable(L *lua.LState, err error) *lua.LTable {
	t := L.NewTable()
	code, server, op := string(manager.CodeInvocationFailed), "", ""
	var me *manager.Error
	if errors.As(err, &me) {
		code, server, op = string(me.Code), me.Server, me.Op
	}
	t.RawSetString("code", lua.LString(code))
	setString(t, "server", server)
	setString(t, "operation", op)
	msg, remedy := errorMessage(err)
	t.RawSetString("message", lua.LString(msg))
	setString(t, "remedy", remedy)
	mt := L.NewTable()
	mt.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString(errTableString(L.CheckTable(1))))
		return 1
	}))
	t.Metatable = mt
	return t
}

func errTableString(t *lua.LTable) string {
	return t.RawGetString("code").String() + ": " + t.RawGetString("message").String()
}

func setString(t *lua.LTable, key, v string) {
	if v != "" {
		t.RawSetString(key, lua.LString(v))
	}
}

func setTime(t *lua.LTable, key string, v time.Time) {
	if !v.IsZero() {
		t.RawSetString(key, lua.LString(v.UTC().Format(time.RFC3339Nano)))
	}
}

// arrayMetatable is json.array_mt (from the registry, whatever a script did
// to the global json), so lists we build encode as arrays even when empty.
func arrayMetatable(L *lua.LState) lua.LValue { return JSONArrayMetatable(L) }

func listTable(L *lua.LState, items []lua.LValue) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for _, v := range items {
		t.Append(v)
	}
	t.Metatable = arrayMetatable(L)
	return t
}

// pushList pushes items, each converted by conv, as one Lua list.
func pushList[T any, V lua.LValue](L *lua.LState, items []T, conv func(*lua.LState, T) V) int {
	list := make([]lua.LValue, len(items))
	for i, item := range items {
		list[i] = conv(L, item)
	}
	L.Push(listTable(L, list))
	return 1
}
