-- testlib.lua — helpers shared by the Lua-level tests (scripts/*_test.lua),
-- loaded with require("testlib"): TestLuaScripts runs them with scripts/
-- as the require path.

local M = {}

-- demo declares a server (served by the in-memory demo server in tests)
-- and waits until it is connected.
function M.demo(name)
  name = name or "demo"
  mcp_add(name, {command = {MCPVISOR, "demo-server"}})
  local ok, why = mcp_wait(name, "connected", 10)
  assert(ok, why)
  return name
end

function M.eq(got, want, what)
  if got ~= want then
    error(string.format("%s: got %s, want %s", what or "value", tostring(got), tostring(want)), 2)
  end
end

function M.has(s, part, what)
  if type(s) ~= "string" or not s:find(part, 1, true) then
    error(string.format("%s: %q does not contain %q", what or "value", tostring(s), part), 2)
  end
end

-- eventually waits until cond() is true, for at most about 10 seconds,
-- sleeping in small steps so hooks and timers run meanwhile.
function M.eventually(cond, what)
  for _ = 1, 10000 do
    if cond() then return end
    sleep(0.001)
  end
  error("timed out waiting for " .. what, 2)
end

return M
