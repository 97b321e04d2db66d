-- hud_test.lua — mcp_hud and mcp_hud_model tested from Lua (docs/observability.md, "The HUD").
--
-- TestLuaScripts (luaapi/scripts_test.go) runs each test_* function in a
-- fresh runtime whose servers are all served by the in-memory demo server,
-- with no terminal: mcp_hud has no display to switch there.

local lib = require("testlib")
local demo, eq, has, eventually = lib.demo, lib.eq, lib.has, lib.eventually

-- row returns the HUD model's row of server name, or nil.
local function row(name)
  for _, r in ipairs(mcp_hud_model()) do
    if r.name == name then return r end
  end
end

function test_hud_model_follows_a_server()
  demo()
  eventually(function() local r = row("demo") return r and r.state == "connected" end, "demo connected in the model")
  local r = row("demo")
  eq(r.glyph, "●", "glyph")
  eq(r.transport, "stdio", "transport")
  eq(r.tools, 4, "tools")
  eq(r.circuit, "closed", "circuit")
  eq(r.calls, 0, "calls")
  eq(r.latency_ms, nil, "latency before any call")
  eq(r.retry_in, nil, "retry_in when connected")
  eq(r.probe_in, nil, "probe_in when the circuit is closed")
  eq(r.attempt, nil, "attempt when connected")
  eq(r.error, nil, "error")

  mcp_call("demo.echo", {text = "hi"})
  mcp_call("demo.fail", {message = "no luck"})
  eventually(function() return row("demo").calls == 2 end, "the calls in the model")
  r = row("demo")
  eq(r.failed_calls, 1, "failed_calls")
  assert(type(r.latency_ms) == "number" and r.latency_ms >= 0, "latency_ms is a number of milliseconds")

  assert(mcp_remove("demo", {wait = true}))
  eventually(function() return row("demo") == nil end, "the row gone after mcp_remove")
end

function test_hud_model_is_a_sorted_list()
  mcp_add("zeta", {command = {MCPVISOR, "demo-server"}})
  mcp_add("Alpha", {command = {MCPVISOR, "demo-server"}})
  mcp_add("off", {command = {MCPVISOR, "demo-server"}, enabled = false})
  eventually(function() return #mcp_hud_model() == 3 end, "three rows")
  local names = {}
  for i, r in ipairs(mcp_hud_model()) do names[i] = r.name end
  eq(table.concat(names, ","), "Alpha,off,zeta", "rows sorted by name")
  eventually(function() return row("off").state == "disabled" end, "the disabled server")
  eq(row("off").glyph, "–", "disabled glyph")
end

function test_hud_without_terminal()
  local ok, why = mcp_hud(true)
  eq(ok, nil, "mcp_hud(true) without a terminal")
  has(why, "no terminal", "why")
  eq(mcp.hud, mcp_hud, "mcp.hud")
  eq(mcp.hud_model, mcp_hud_model, "mcp.hud_model")
  local raised, msg = pcall(mcp_hud, "yes")
  eq(raised, false, "a non-boolean raises")
  has(msg, "true or false expected", "message")
end
