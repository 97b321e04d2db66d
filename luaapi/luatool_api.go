package luaapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	lua "github.com/yuin/gopher-lua"

	"github.com/mcpvisor/mcpvisor/internal/expose"
	"github.com/mcpvisor/mcpvisor/manager"
	"github.com/mcpvisor/mcpvisor/manager/argschema"
)

// defaultToolServer is the server name of mcp_tool tools declared without
// one.
const defaultToolServer = "lua"

// luaToolDecl is one mcp_tool.
type luaToolDecl struct {
	server, name string // the server's own spelling, and the tool's
	description  string
	schema       map[string]any // the input schema, a JSON object
	fn           *lua.LFunction
	where        string
}

// luaServer serves the Lua tools of one server name as an in-process MCP
// server, which the manager supervises like any other: it connects
// through Dial, lists the tools and calls them. A call runs the tool's
// handler on the loop.
type luaServer struct {
	r    *Runtime
	name string
	srv  *mcp.Server // safe for concurrent use; changed on the loop only

	// Owned by the loop.
	tools map[string]*luaToolEntry
}

type luaToolEntry struct {
	decl       luaToolDecl
	fromConfig bool // declared by the config, which removes it when it no longer declares it
}

var _ manager.Dialer = (*luaServer)(nil)

// Dial connects the manager to the server through an in-memory pipe.
func (s *luaServer) Dial(ctx context.Context) (mcp.Transport, error) {
	client, server := mcp.NewInMemoryTransports()
	if _, err := s.srv.Connect(ctx, server, nil); err != nil {
		return nil, fmt.Errorf("server %q: connect to the Lua tools: %w", s.name, err)
	}
	return client, nil
}

// mcp_tool(name, {description = …, input_schema = {…}, handler =
// function(args, ctx) … end [, server = "lua"]}) → "server.name". Defines a
// tool in Lua, served like any server's (mcp_call, the gateway). The
// handler runs as a task with the slice budget of a hook and may call other
// servers; it returns a string (text), a table (structured content, with
// its JSON as text), or nil, err (an error result); an error it raises is
// an error result too. Arguments are checked against input_schema before
// it runs. In the config file the tool goes with a reload that no longer
// declares it.
func (r *Runtime) luaTool(L *lua.LState) int {
	name := L.CheckString(1)
	if err := checkToolName(name); err != nil {
		L.ArgError(1, err.Error())
	}
	opts := L.CheckTable(2)
	d := luaToolDecl{name: name, server: defaultToolServer, where: declaredAt(L)}
	opts.ForEach(func(k, v lua.LValue) {
		switch key := lua.LVAsString(k); key {
		case "description":
			s, ok := v.(lua.LString)
			if !ok {
				L.ArgError(2, "description must be a string, got "+v.Type().String())
			}
			d.description = string(s)
		case "server":
			s, ok := v.(lua.LString)
			if !ok {
				L.ArgError(2, "server must be a string, got "+v.Type().String())
			}
			n, err := manager.NormalizeName(string(s))
			if err != nil {
				L.ArgError(2, err.Error())
			}
			d.server = n
		case "handler":
			fn, ok := v.(*lua.LFunction)
			if !ok {
				L.ArgError(2, "handler must be a function(args, ctx), got "+v.Type().String())
			}
			d.fn = fn
		case "input_schema":
			d.schema = inputSchema(L, v)
		default:
			L.ArgError(2, fmt.Sprintf("unknown field %s; a tool takes description, input_schema, handler and server", key))
		}
	})
	if d.fn == nil {
		L.ArgError(2, "handler is required: function(args, ctx) returning a string, a table or nil, err")
	}
	if d.schema == nil {
		d.schema = map[string]any{"type": "object"}
	}
	full := d.server + "." + d.name
	if t, ok := r.tasks[L]; ok && t.config != nil {
		want := t.config
		skey := manager.NameKey(d.server)
		if decl, clash := want.servers[skey]; clash {
			L.RaiseError("INVALID_CONFIG: mcp_tool(%q): server %q is declared by mcp_add at %s; give the tool another server = …", name, d.server, decl.where)
		}
		if prev, dup := want.luaTools[skey+"."+name]; dup {
			L.RaiseError("INVALID_CONFIG: tool %q is declared twice in %s (first at %s); each tool may be declared once", full, want.file, prev.where)
		}
		want.luaTools[skey+"."+name] = d
		L.Push(lua.LString(full))
		return 1
	}
	if err := r.setLuaTool(d, false); err != nil {
		raiseCoded(L, err)
	}
	L.Push(lua.LString(full))
	return 1
}

// checkToolName accepts the names every MCP client accepts.
func checkToolName(name string) error {
	switch {
	case name == "" || len(name) > 64:
		return fmt.Errorf("tool name must be 1 to 64 characters, got %q", name)
	case !expose.ValidName(name):
		return fmt.Errorf("tool name %q may hold only letters, digits, '_' and '-'", name)
	}
	return nil
}

// inputSchema reads input_schema: a JSON schema of type object.
func inputSchema(L *lua.LState, v lua.LValue) map[string]any {
	t, ok := v.(*lua.LTable)
	if !ok {
		L.ArgError(2, "input_schema must be a table like {type = \"object\", properties = {…}}, got "+v.Type().String())
	}
	raw, err := FromLua(t)
	if err != nil {
		L.ArgError(2, "input_schema: "+err.Error())
	}
	schema, ok := raw.(map[string]any)
	if !ok || schema["type"] != "object" {
		L.ArgError(2, "input_schema must have type = \"object\": tools take named arguments")
	}
	// Round-trip through JSON so that the schema compares and travels
	// as plain JSON values.
	b, err := json.Marshal(schema)
	if err == nil {
		err = json.Unmarshal(b, &schema)
	}
	if err != nil {
		L.ArgError(2, "input_schema: "+err.Error())
	}
	return schema
}

// setLuaTool serves d, making its server if need be. A tool whose listing
// is unchanged keeps it (clients are not told to relist); only its handler
// is replaced.
func (r *Runtime) setLuaTool(d luaToolDecl, fromConfig bool) error {
	key := manager.NameKey(d.server)
	s := r.toolServers[key]
	fresh := s == nil
	if fresh {
		s = &luaServer{r: r, name: d.server, tools: map[string]*luaToolEntry{},
			srv: mcp.NewServer(&mcp.Implementation{Name: "mcpvisor-lua", Version: "lua"}, &mcp.ServerOptions{
				Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			})}
		if r.toolServers == nil {
			r.toolServers = map[string]*luaServer{}
		}
		r.toolServers[key] = s
	}
	if e, ok := s.tools[d.name]; ok && e.decl.description == d.description && reflect.DeepEqual(e.decl.schema, d.schema) {
		e.decl, e.fromConfig = d, fromConfig
		return nil
	}
	s.srv.AddTool(&mcp.Tool{Name: d.name, Description: d.description, InputSchema: d.schema}, s.handler(d.name))
	s.tools[d.name] = &luaToolEntry{decl: d, fromConfig: fromConfig}
	if fresh {
		// Added once its first tool is there, so that the first discovery
		// lists it (a tool added later is announced with list_changed).
		if err := r.servers.Add(d.server, manager.Spec{Transport: manager.TransportInProcess, Dial: s}); err != nil {
			// Forgotten, so that the next mcp_tool for it tries again.
			delete(r.toolServers, key)
			return err
		}
	}
	return nil
}

// applyLuaTools makes the Lua tools match what the config declares: the
// ones the last config declared and want does not go (and a server left
// without tools is removed), the others are set. Tools defined at the
// REPL stay.
func (r *Runtime) applyLuaTools(want *desired) {
	for key, s := range r.toolServers {
		var gone []string
		for name, e := range s.tools {
			if _, ok := want.luaTools[key+"."+name]; !ok && e.fromConfig {
				gone = append(gone, name)
				delete(s.tools, name)
			}
		}
		if len(gone) > 0 {
			s.srv.RemoveTools(gone...)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(want.luaTools)) {
		if err := r.setLuaTool(want.luaTools[k], true); err != nil {
			r.opts.Logger.Error("config: cannot add the server of the Lua tools", "tool", k, "error", err)
		}
	}
	for key, s := range r.toolServers {
		if len(s.tools) == 0 {
			delete(r.toolServers, key)
			if _, err := r.servers.Remove(s.name); err != nil {
				r.opts.Logger.Warn("mcp_tool: cannot remove the server of the Lua tools", "server", s.name, "error", err)
			}
		}
	}
}

// handler runs a call of tool on the loop. It is called by the SDK on the
// session's goroutine, and waits for the handler's task or the request's
// end; the loop never waits on it.
func (s *luaServer) handler(tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args map[string]any
		if raw := req.Params.Arguments; len(raw) > 0 && string(raw) != "null" {
			var v any
			err := json.Unmarshal(raw, &v)
			if args, _ = v.(map[string]any); err != nil || args == nil {
				return toolError(fmt.Sprintf("tool %s.%s: arguments must be a JSON object, got %s", s.name, tool, argschema.Describe(v))), nil
			}
		}
		if args == nil {
			args = map[string]any{}
		}
		res, err := fromOutside(s.r, ctx, func(reply func(*mcp.CallToolResult)) {
			s.r.runLuaTool(ctx, s, tool, args, reply)
		})
		switch {
		case errors.Is(err, errClosed):
			return toolError(fmt.Sprintf("tool %s.%s: the Lua runtime is closed", s.name, tool)), nil
		case err != nil:
			return nil, err
		}
		return res, nil
	}
}

// runLuaTool starts the tool's handler as a budgeted task; reply gets the
// result.
func (r *Runtime) runLuaTool(ctx context.Context, s *luaServer, tool string, args map[string]any, reply func(*mcp.CallToolResult)) {
	full := s.name + "." + tool
	e, ok := s.tools[tool]
	switch {
	case r.closing:
		reply(toolError(fmt.Sprintf("tool %s: the Lua runtime is closing", full)))
		return
	case !ok || r.toolServers[manager.NameKey(s.name)] != s:
		reply(toolError(fmt.Sprintf("tool %s is no longer defined", full)))
		return
	}
	L := r.state
	info := L.CreateTable(0, 2)
	info.RawSetString("server", lua.LString(s.name))
	info.RawSetString("tool", lua.LString(tool))
	r.spawnWith(ctx, e.decl.fn, []lua.LValue{ToLua(L, args), info}, taskOptions{budget: r.opts.SliceBudget}, func(vals []lua.LValue, err error) {
		reply(toolResult(full, vals, err))
	})
}

// toolResult turns what a handler returned into the call's result.
func toolResult(full string, vals []lua.LValue, err error) *mcp.CallToolResult {
	if err != nil {
		return toolError(fmt.Sprintf("tool %s: %v", full, err))
	}
	first, second := lua.LValue(lua.LNil), lua.LValue(lua.LNil)
	if len(vals) > 0 {
		first = vals[0]
	}
	if len(vals) > 1 {
		second = vals[1]
	}
	switch v := first.(type) {
	case *lua.LNilType:
		if second != lua.LNil {
			return toolError(errorText(second))
		}
		return &mcp.CallToolResult{Content: []mcp.Content{}}
	case lua.LString:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(v)}}}
	case *lua.LTable:
		data, err := FromLua(v)
		if err != nil {
			return toolError(fmt.Sprintf("tool %s: its result cannot be sent as JSON: %v", full, err))
		}
		b, err := json.Marshal(data)
		if err != nil {
			return toolError(fmt.Sprintf("tool %s: its result cannot be sent as JSON: %v", full, err))
		}
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
		if _, isObject := data.(map[string]any); isObject {
			res.StructuredContent = json.RawMessage(b)
		}
		return res
	default:
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: lua.LVAsString(lua.LString(v.String()))}}}
	}
}

// errorText renders the err a handler returned: a string, or an error
// table from mcp_call ("CODE: message").
func errorText(v lua.LValue) string {
	if t, ok := v.(*lua.LTable); ok {
		return errTableString(t)
	}
	return strings.TrimSpace(v.String())
}

func toolError(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
