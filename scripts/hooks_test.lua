-- hooks_test.lua — hooks, timers and callbacks (mcp_on, mcp_off,
-- mcp_after, mcp_every, mcp_call_cb; each run in its own coroutine on the
-- one Lua loop) tested from Lua.
--
-- TestLuaScripts (luaapi/scripts_test.go) loads this file into a fresh
-- runtime for each global function named test_* and runs it:
--
--   go test ./luaapi -run TestLuaScripts/test_after_runs_once
--
-- Every server declared here is served by the in-memory demo server. Hooks
-- and timers run as their own tasks on the same loop as the test, so the
-- test waits for them by sleeping in small steps (the loop runs them
-- meanwhile), within a bound.

local lib = require("testlib")
local demo, eq, has, eventually = lib.demo, lib.eq, lib.has, lib.eventually

-- eventually waits until cond() is true, for at most about 10 seconds.

function test_on_gets_event_table()
  local seen
  local h = mcp_on("connected", function(e) seen = e end, {server = "DEMO"})
  eq(type(h.id), "number", "handle id")
  has(tostring(h), 'mcp_on("connected", server="DEMO")#', "tostring(handle)")
  demo()
  eventually(function() return seen ~= nil end, "the connected hook")
  eq(seen.kind, "connected", "kind")
  eq(seen.server, "demo", "server")
  eq(type(seen.seq), "number", "seq")
  eq(seen.tools, 4, "tools field")
  eq(type(seen.time), "string", "time")
  eq(mcp_off(h), true, "first mcp_off")
  eq(mcp_off(h), false, "second mcp_off")
end

function test_star_hook_sees_lifecycle_in_order()
  local kinds, last = {}, 0
  mcp_on("*", function(e)
    if e.server == "demo" then
      assert(e.seq > last, "seq increases")
      last = e.seq
      kinds[#kinds + 1] = e.kind
    end
  end)
  demo()
  eventually(function() return #kinds >= 3 end, "three lifecycle events")
  eq(table.concat(kinds, " "), "added connecting connected", "kinds")
end

function test_hook_calls_a_tool()
  local text
  mcp_on("connected", function(e)
    text = mcp_call(e.server .. ".echo", {text = "from a hook"}).text
  end)
  demo()
  eventually(function() return text ~= nil end, "the hook's call")
  eq(text, "from a hook", "text")
end

function test_failing_hook_reports_hook_error()
  local got = {}
  mcp_on("hook_error", function(e) got[#got + 1] = e end)
  local bad = mcp_on("added", function(e) error("no good: " .. e.server) end)
  local after = false
  mcp_on("added", function() after = true end)
  demo()
  eventually(function() return #got == 1 and after end, "hook_error")
  local e = got[1]
  eq(e.hook, 'mcp_on("added")', "hook")
  eq(e.hook_id, bad.id, "hook_id")
  eq(e.failures, 1, "failures")
  eq(e.disabled, nil, "disabled")
  has(e.error, "hooks_test.lua:", "error position")
  has(e.error, "no good: demo", "error")
  has(e.traceback, "stack traceback:", "traceback")
  -- Still registered: mcp_off finds it.
  eq(mcp_off(bad), true, "still registered")
end

function test_runaway_hook_is_stopped()
  local got
  mcp_on("hook_error", function(e) got = e end)
  mcp_on("added", function() while true do end end)
  demo()
  eventually(function() return got ~= nil end, "the runaway hook's hook_error")
  has(got.error, "budget", "error")
  has(got.traceback, "hooks_test.lua:", "traceback")
  eq(mcp_call("demo.echo", {text = "still here"}).text, "still here", "the host carries on")
end

function test_after_runs_once()
  local n = 0
  local h = mcp_after(0.01, function() n = n + 1 end)
  eventually(function() return n == 1 end, "the timer")
  eq(mcp_off(h), false, "a fired one-shot timer is gone")
  local done = false
  mcp_after(0.05, function() done = true end)
  eventually(function() return done end, "a later timer")
  eq(n, 1, "runs")
end

function test_every_repeats_until_off()
  local n = 0
  local h = mcp_every(0.01, function() n = n + 1 end)
  eventually(function() return n >= 3 end, "three ticks")
  eq(mcp_off(h), true, "mcp_off")
  local stopped = n
  local done = false
  mcp_after(0.05, function() done = true end)
  eventually(function() return done end, "a later timer")
  eq(n, stopped, "ticks after mcp_off")
end

function test_timers_may_suspend()
  demo()
  local text
  mcp_after(0, function()
    sleep(0.001)
    text = mcp_call("demo.echo", {text = "from a timer"}).text
  end)
  eventually(function() return text ~= nil end, "the timer's call")
  eq(text, "from a timer", "text")
end

function test_call_cb_inside_pcall()
  demo()
  local res, err, called
  local ok, v = pcall(mcp_call_cb, "demo.echo", {text = "cb"}, function(r, e)
    res, err, called = r, e, true
  end)
  eq(ok, true, "pcall")
  eq(v, true, "mcp_call_cb's return")
  eq(called, nil, "the callback runs later, not inside mcp_call_cb")
  eventually(function() return called end, "the callback")
  eq(res.text, "cb", "result")
  eq(err, nil, "err")

  local failed
  pcall(mcp_call_cb, "demo.nope", {}, function(r, e) failed = {r = r, e = e} end)
  eventually(function() return failed ~= nil end, "the failing call's callback")
  eq(failed.r, nil, "result of a failed call")
  eq(failed.e.code, "TOOL_NOT_FOUND", "err.code")
end
