package luaapi_test

// mcp_tool: tools defined in Lua, served as an in-process server the
// manager keeps like any other.

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/mcpvisor/mcpvisor/manager"
)

func TestMcpToolCalledFromLua(t *testing.T) {
	r := newTestRuntime(t, nil)
	require.Equal(t, "lua.greet", r.one(t, `return mcp_tool("greet", {
		description = "Says hello",
		input_schema = {type = "object", properties = {name = {type = "string"}}, required = {"name"}},
		handler = function(args, ctx) return "hello " .. args.name .. " from " .. ctx.server .. "." .. ctx.tool end,
	})`))
	require.Equal(t, "connected", r.one(t, `assert(mcp_wait("lua", "connected")); return mcp_status("lua").state`))
	require.Equal(t, "hello ada from lua.greet", r.one(t, `return assert(mcp_call("lua.greet", {name = "ada"})).text`))
	require.Equal(t, "Says hello", r.one(t, `for _, t in ipairs(mcp_tools("lua")) do if t.tool == "greet" then return t.description end end`))

	// Arguments are checked against the schema before the handler runs.
	r.run(t, `called = false
		mcp_tool("strict", {input_schema = {type = "object", properties = {n = {type = "number"}}, required = {"n"}},
		  handler = function(args) called = true return "ran" end})`)
	waitTool(t, r, "lua.strict")
	res := r.run(t, `local res, err = mcp_call("lua.strict", {n = "not a number"}); return tostring(res and res.is_error or err), called`)
	require.Contains(t, res[0], "n")
	require.Equal(t, "false", res[1], "the handler did not run")
}

// waitTool waits until the manager lists a tool (a new tool is announced
// with list_changed, and rediscovered in the background).
func waitTool(t *testing.T, r *testRuntime, full string) {
	t.Helper()
	// The rediscovery has no event to wait on from here.
	require.Eventually(t, func() bool {
		tools, _ := r.m.Tools("")
		return slices.ContainsFunc(tools, func(ti manager.ToolInfo) bool { return ti.FullName == full })
	}, 10*time.Second, 10*time.Millisecond, "tool %s never listed", full)
}

func TestMcpToolResults(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.run(t, `
		mcp_add("demo", {command = {"demo"}})
		mcp_tool("text", {handler = function() return "plain" end})
		mcp_tool("data", {handler = function(args) return {n = 42, tags = {"a", "b"}} end})
		mcp_tool("fails", {handler = function() return nil, "no disk" end})
		mcp_tool("raises", {handler = function() error("kaboom") end})
		mcp_tool("relay", {server = "tools", handler = function(args)
		  local res, err = mcp_call("demo.echo", {text = args.text})
		  if not res then return nil, err end
		  return "relayed: " .. res.text
		end})
		assert(mcp_wait("lua", "connected")); assert(mcp_wait("tools", "connected")); assert(mcp_wait("demo", "connected"))`)
	require.Equal(t, "plain false", r.one(t, `local res = assert(mcp_call("lua.text", {})); return res.text .. " " .. tostring(res.is_error)`))
	require.Equal(t, []string{"42", "b", `{"n":42,"tags":["a","b"]}`},
		r.run(t, `local res = assert(mcp_call("lua.data", {})); return res.structured.n, res.structured.tags[2], res.text`))
	for _, tc := range []struct{ tool, want string }{
		{"lua.fails", "no disk"},
		{"lua.raises", "kaboom"},
	} {
		vals := r.run(t, `local res, err = mcp_call("`+tc.tool+`", {}); if res then return tostring(res.is_error), res.text end; return "err", tostring(err)`)
		require.Contains(t, vals[len(vals)-1], tc.want, tc.tool)
		require.NotEqual(t, "false", vals[0], tc.tool)
	}
	require.Contains(t, r.one(t, `return assert(mcp_call("tools.relay", {text = "hi"})).text`), "relayed: ")
}

func TestMcpToolFollowsTheConfig(t *testing.T) {
	g := newGatewayRuntime(t)
	require.NoError(t, g.load(t, `
		mcp_tool("a", {handler = function() return "a1" end})
		mcp_tool("b", {handler = function() return "b1" end})`))
	waitTool(t, g.testRuntime, "lua.a")
	waitTool(t, g.testRuntime, "lua.b")
	require.Equal(t, "a1", g.one(t, `return assert(mcp_call("lua.a", {})).text`))

	// A reload: a's handler changes (the server stays), b goes.
	spec, err := g.m.Spec("lua")
	require.NoError(t, err)
	require.NoError(t, g.load(t, `mcp_tool("a", {handler = function() return "a2" end})`))
	require.Equal(t, "a2", g.one(t, `return assert(mcp_call("lua.a", {})).text`))
	same, err := g.m.Spec("lua")
	require.NoError(t, err)
	require.True(t, spec.Equal(same), "the server of the Lua tools is not replaced")
	waitGone := func(full string) {
		require.Eventually(t, func() bool {
			tools, _ := g.m.Tools("")
			return !slices.ContainsFunc(tools, func(ti manager.ToolInfo) bool { return ti.FullName == full })
		}, 10*time.Second, 10*time.Millisecond, "%s still listed", full)
	}
	waitGone("lua.b")

	// A config without tools removes their server.
	require.NoError(t, g.load(t, `-- nothing`))
	_, err = g.m.Status("lua")
	require.ErrorIs(t, err, manager.ErrServerNotFound)

	for _, tc := range []struct{ src, want string }{
		{`mcp_tool("x", {})`, "handler is required"},
		{`mcp_tool("x y", {handler = print})`, "may hold only letters"},
		{`mcp_tool("x", {handler = print, input_schema = {type = "array"}})`, `type = "object"`},
		{"mcp_add(\"lua\", {command = {\"x\"}})\nmcp_tool(\"x\", {handler = print})", `server "lua" is declared by mcp_add at startup.lua:1`},
		{"mcp_tool(\"x\", {handler = print})\nmcp_tool(\"x\", {handler = print})", `tool "lua.x" is declared twice`},
	} {
		require.ErrorContains(t, g.load(t, tc.src), tc.want, tc.src)
	}
}

// A handler that computes past its slice budget is stopped, and the caller
// gets an error result instead of a hang.
func TestMcpToolHandlerIsBudgeted(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.run(t, `mcp_tool("spin", {handler = function() while true do end end}); assert(mcp_wait("lua", "connected"))`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := r.m.Call(ctx, "lua.spin", map[string]any{}, manager.CallOptions{})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, res.Content[0].(*mcp.TextContent).Text, "stopped after")
}

// An mcp_tool whose server name is taken by a server declared otherwise is
// refused with the manager's error, and a later one can still use the name
// once it is free.
func TestMcpToolServerNameTaken(t *testing.T) {
	r := newTestRuntime(t, nil)
	r.run(t, `mcp_add("taken", {command = {"x"}, enabled = false})`)
	le := r.fail(t, `mcp_tool("t", {server = "taken", handler = function() return "x" end})`)
	require.Contains(t, le.Message, "NAME_CONFLICT")
	r.run(t, `assert(mcp_remove("taken", {wait = true}))`)
	require.Equal(t, "taken.t", r.one(t, `return mcp_tool("t", {server = "taken", handler = function() return "x" end})`))
	require.Equal(t, "x", r.one(t, `assert(mcp_wait("taken", "connected")) return mcp_call("taken.t", {}).text`))
}
