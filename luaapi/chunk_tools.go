package luaapi

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/internal/suggest"
)

// defaultSearchLimit is how many tools search_tools returns when the
// chunk does not say.
const defaultSearchLimit = 10

// index makes the run's lookups of env.Tools: by exposed name, and by
// server and the server's name of the tool.
func (c *chunkRun) index() {
	c.byName = make(map[string]*ChunkTool, len(c.env.Tools))
	c.byServer = make(map[string]map[string]*ChunkTool)
	for i := range c.env.Tools {
		t := &c.env.Tools[i]
		c.byName[t.Name] = t
		tools, ok := c.byServer[t.Server]
		if !ok {
			tools = make(map[string]*ChunkTool)
			c.byServer[t.Server] = tools
			c.servers = append(c.servers, t.Server)
		}
		tools[t.Tool] = t
	}
}

// installTools defines tools.<server>.<tool>, call_tool, search_tools and
// describe.
func (c *chunkRun) installTools(L *lua.LState) {
	root := L.CreateTable(0, len(c.servers))
	for _, server := range c.servers {
		tools := c.byServer[server]
		st := L.CreateTable(0, len(tools))
		for name, t := range tools {
			st.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return c.callTool(L, t, 1) }))
		}
		st.Metatable = c.unknownTool(L, server)
		root.RawSetString(server, st)
	}
	root.Metatable = c.unknownServer(L)
	L.SetGlobal("tools", root)
	L.SetGlobal("call_tool", L.NewFunction(c.luaCallTool))
	L.SetGlobal("search_tools", L.NewFunction(c.luaSearchTools))
	L.SetGlobal("describe", L.NewFunction(c.luaDescribe))
}

// unknownTool is the metatable of tools.<server>: a tool it does not have
// is an error that names the server's tools like it.
func (c *chunkRun) unknownTool(L *lua.LState, server string) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		name := lua.LVAsString(L.Get(2))
		names := slices.Sorted(maps.Keys(c.byServer[server]))
		c.raise(L, ChunkUnknownTool, "tools.%s.%s: server %q has no tool %q you may call%s; its tools are: %s",
			server, name, server, name, didYouMean(name, names), someNames(names))
		return 0
	}))
	return mt
}

// unknownServer is the metatable of tools: a server it does not have is
// an error naming the servers there are.
func (c *chunkRun) unknownServer(L *lua.LState) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		name := lua.LVAsString(L.Get(2))
		c.raise(L, ChunkUnknownTool, "tools.%s: no server %q has tools you may call%s; the servers are: %s",
			name, name, didYouMean(name, c.servers), someNames(c.servers))
		return 0
	}))
	return mt
}

// maxNamesShown bounds the names an error lists.
const maxNamesShown = 20

// someNames lists names, the first maxNamesShown of them.
func someNames(names []string) string {
	if len(names) <= maxNamesShown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more (search_tools(query) finds tools)", strings.Join(names[:maxNamesShown], ", "), len(names)-maxNamesShown)
}

func didYouMean(name string, candidates []string) string {
	if best := suggest.Closest(name, candidates); best != "" {
		return " (did you mean " + best + "?)"
	}
	return ""
}

// call_tool(name, args) → result: calls a tool by the name the client
// sees it under.
func (c *chunkRun) luaCallTool(L *lua.LState) int {
	name := L.CheckString(1)
	t, ok := c.byName[name]
	if !ok {
		names := slices.Collect(maps.Keys(c.byName))
		c.raise(L, ChunkUnknownTool, "call_tool: no tool %q you may call%s; search_tools(query) finds tools", name, didYouMean(name, names))
	}
	return c.callTool(L, t, 2)
}

// callTool calls t with the argument table at arg and returns its
// structured content as Lua, or its text. A failed call, or a result that
// is an error, raises an error naming the tool.
func (c *chunkRun) callTool(L *lua.LState, t *ChunkTool, arg int) int {
	what := "tools." + t.Server + "." + t.Tool
	args := map[string]any{}
	switch v := L.Get(arg).(type) {
	case *lua.LNilType:
	case *lua.LTable:
		a, err := FromLua(v)
		if err != nil {
			L.ArgError(arg, err.Error())
		}
		m, ok := a.(map[string]any)
		if !ok {
			L.ArgError(arg, "arguments must be a table of named fields like {query = \"…\"}, not a list")
		}
		args = m
	default:
		L.ArgError(arg, "arguments must be a table like {query = \"…\"}, got "+v.Type().String())
	}
	if c.limits.MaxCalls > 0 && c.calls >= c.limits.MaxCalls {
		c.stop(errCallCap) // a pcall cannot catch it for good
		c.raise(L, ChunkCallCap, "%s: the chunk made %d tool calls, the limit per run", what, c.calls)
	}
	c.calls++
	// The call's time is not Lua's: the slice starts again after it. If
	// the slice ran out already, the context is done and the call fails.
	c.slice.Stop()
	res, err := c.env.Call(c.ctx, t.Name, args)
	c.slice.Reset(c.limits.SliceBudget)
	switch {
	case err != nil:
		c.raise(L, ChunkToolFailed, "%s: %v", what, err)
	case res == nil:
		c.raise(L, ChunkToolFailed, "%s: the call returned no result", what)
	case res.IsError:
		c.raise(L, ChunkToolFailed, "%s failed: %s", what, resultText(res))
	case res.StructuredContent != nil:
		v, err := ToLuaChecked(L, res.StructuredContent)
		if err != nil {
			c.raise(L, ChunkToolFailed, "%s: its structured result cannot be read: %v", what, err)
		}
		L.Push(v)
	default:
		L.Push(lua.LString(resultText(res)))
	}
	return 1
}

// resultText joins the text parts of a result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// search_tools(query [, limit [, server]]) → list of {name, server, tool,
// description, why}.
func (c *chunkRun) luaSearchTools(L *lua.LState) int {
	query := L.CheckString(1)
	limit := L.OptInt(2, defaultSearchLimit)
	server := L.OptString(3, "")
	if limit < 1 {
		L.ArgError(2, fmt.Sprintf("limit must be at least 1, got %d", limit))
	}
	if c.env.Search == nil {
		c.raise(L, ChunkUnavailable, "search_tools is not available here; describe(name) and pairs(tools.<server>) list the tools")
	}
	hits := c.env.Search(query, limit, server)
	list := L.CreateTable(len(hits), 0)
	for _, h := range hits {
		e := L.CreateTable(0, 5)
		e.RawSetString("name", lua.LString(h.Name))
		e.RawSetString("server", lua.LString(h.Server))
		if t, ok := c.byName[h.Name]; ok {
			e.RawSetString("tool", lua.LString(t.Tool))
		}
		e.RawSetString("description", lua.LString(h.Description))
		e.RawSetString("why", lua.LString(h.Why))
		list.Append(e)
	}
	list.Metatable = JSONArrayMetatable(L)
	L.Push(list)
	return 1
}

// describe(name) → {name, server, tool, description, input_schema}: name
// is the name the client sees or "server.tool".
func (c *chunkRun) luaDescribe(L *lua.LState) int {
	name := L.CheckString(1)
	t, ok := c.byName[name]
	if !ok {
		if server, tool, dotted := strings.Cut(name, "."); dotted {
			t, ok = c.byServer[server][tool]
		}
	}
	if !ok {
		names := slices.Collect(maps.Keys(c.byName))
		c.raise(L, ChunkUnknownTool, "describe: no tool %q you may call%s; search_tools(query) finds tools", name, didYouMean(name, names))
	}
	d := L.CreateTable(0, 5)
	d.RawSetString("name", lua.LString(t.Name))
	d.RawSetString("server", lua.LString(t.Server))
	d.RawSetString("tool", lua.LString(t.Tool))
	d.RawSetString("description", lua.LString(t.Description))
	schema := lua.LValue(L.NewTable())
	if len(t.InputSchema) > 0 {
		v, err := DecodeJSON(L, t.InputSchema)
		if err != nil {
			c.raise(L, ChunkToolFailed, "describe: the input schema of %s cannot be read: %v", name, err)
		}
		schema = v
	}
	d.RawSetString("input_schema", schema)
	L.Push(d)
	return 1
}
