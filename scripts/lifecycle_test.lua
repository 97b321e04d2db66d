-- lifecycle_test.lua — mcp_disable/mcp_enable/mcp_reconnect, mcp_metrics
-- and the status and per-connection metrics fields, tested from Lua.
--
--   go test ./luaapi -run TestLuaScripts/test_disable_enable

local lib = require("testlib")
local demo, eq, has = lib.demo, lib.eq, lib.has

function test_status_fields()
  demo()
  local st = mcp_status("demo")
  eq(st.state, "connected", "state")
  eq(st.circuit, "closed", "circuit")
  eq(st.healthy, true, "healthy")
  assert(type(st.since) == "string", "since is a timestamp")
  eq(st.next_attempt_in, nil, "no attempt pending while connected")
end

function test_disable_enable()
  demo()
  assert(mcp_disable("demo"))
  assert(mcp_wait("demo", "disabled", 10))
  local res, err = mcp_call("demo.echo", {text = "x"})
  eq(res, nil, "call while disabled")
  eq(err.code, "SERVER_DISABLED", "code")
  has(err.message, 'mcp_enable("demo")', "the error says how to fix it")
  eq(err.remedy, 'mcp_enable("demo") to connect it', "remedy")
  eq(mcp_status("demo").remedy, 'mcp_enable("demo") to connect it', "the status says it too")
  local _, rerr = mcp_reconnect("demo")
  eq(rerr.remedy, 'mcp_enable("demo") to connect it', "reconnecting a disabled server")
  assert(mcp_enable("demo"))
  assert(mcp_wait("demo", "connected", 10))
  eq(mcp_call("demo.echo", {text = "back"}).content[1].text, "back", "echo after enable")
  eq(mcp_status("demo").remedy, nil, "no remedy while connected")
end

function test_reconnect_replaces_the_session()
  demo()
  local seen = {}
  mcp_on("*", function(e) if e.server == "demo" then seen[#seen + 1] = e.kind end end)
  assert(mcp_reconnect("demo"))
  lib.eventually(function() return seen[#seen] == "connected" end, "reconnected")
  eq(table.concat(seen, " "), "disconnected connecting connected", "events")
  eq(mcp_metrics("demo").reconnects, 1, "reconnects")
end

function test_unknown_server_errors()
  for _, fn in ipairs({mcp_reconnect, mcp_enable, mcp_disable, mcp_metrics}) do
    local ok, err = fn("nope")
    eq(ok, nil, "result")
    eq(err.code, "SERVER_NOT_FOUND", "code")
  end
end

function test_metrics()
  demo()
  assert(mcp_call("demo.echo", {text = "a"}))
  mcp_call("demo.fail", {message = "boom"})
  local m = mcp_metrics("demo")
  eq(m.server, "demo", "server")
  eq(m.state, "connected", "state")
  eq(m.requests, 2, "requests")
  eq(m.errors.tool, 1, "tool errors")
  eq(m.errors.total, 1, "total errors")
  eq(m.in_flight, 0, "in flight")
  assert(m.latency_ms >= 0, "latency")
  local pool = mcp_metrics()
  eq(pool.servers_total, 1, "servers")
  eq(pool.by_state.connected, 1, "connected")
  eq(pool.requests, 2, "pool requests")
  eq(pool.servers.demo.requests, 2, "per-server table")
end
