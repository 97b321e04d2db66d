-- api_test.lua — the Lua control plane (the mcp_* globals, json, sleep)
-- tested from Lua.
--
-- TestLuaScripts (luaapi/scripts_test.go) loads this file into a fresh
-- runtime for each global function named test_* and runs it; a failed
-- assert fails that Go subtest:
--
--   go test ./luaapi -run TestLuaScripts/test_echo
--
-- Every server declared here is served by the in-memory demo server,
-- whatever its command.

local lib = require("testlib")
local demo, eq, has = lib.demo, lib.eq, lib.has

-- wait_event waits until an event of kind for server is in the history.
-- The manager publishes an event just after storing the state it
-- describes, so mcp_wait may return before the event is out; Lua has no
-- subscription yet, hence this bounded poll.
local function wait_event(kind, server)
  for _ = 1, 2000 do
    for _, e in ipairs(mcp_events(10)) do
      if e.kind == kind and e.server == server then return e end
    end
    sleep(0.001)
  end
  error(string.format("no %s event for %s", kind, server), 2)
end

-- eq asserts equality and says what differed.

local function starts(s, prefix, what)
  if type(s) ~= "string" or s:sub(1, #prefix) ~= prefix then
    error(string.format("%s: %q does not start with %q", what or "value", tostring(s), prefix), 2)
  end
end

function test_echo()
  demo()
  local res, err = mcp_call("demo.echo", {text = "hi"})
  eq(err, nil, "err")
  eq(res.text, "hi", "text")
  eq(res.is_error, false, "is_error")
  eq(#res.content, 1, "#content")
  eq(res.content[1].type, "text", "content[1].type")
  eq(res.content[1].text, "hi", "content[1].text")
  eq(res.structured, nil, "structured")
end

function test_add_structured()
  demo()
  local res = mcp_call("demo.add", {a = 2, b = 3})
  eq(res.structured.sum, 5, "structured.sum")
  eq(res.text, "5", "text")
  eq(json.encode(res.structured), '{"sum":5}', "encoded")
  -- Bare tool names resolve when one server offers the tool.
  eq(mcp_call("add", {a = -1, b = 1}).structured.sum, 0, "bare name")
end

function test_tool_error_is_a_result()
  demo()
  local res, err = mcp_call("demo.fail", {message = "disk full"})
  eq(err, nil, "err")
  eq(res.is_error, true, "is_error")
  eq(res.text, "disk full", "text")
end

function test_error_table()
  demo()
  local res, err = mcp_call("demo.nope", {x = 1})
  eq(res, nil, "res")
  eq(err.code, "TOOL_NOT_FOUND", "code")
  eq(err.server, "demo", "server")
  eq(err.operation, 'tools/call "nope"', "operation")
  has(err.message, '"nope"', "message")
  eq(tostring(err), err.code .. ": " .. err.message, "tostring")
  starts(tostring(err), "TOOL_NOT_FOUND: ", "tostring")
  -- The error table encodes as plain JSON for logs.
  eq(json.decode(json.encode(err)).code, "TOOL_NOT_FOUND", "encoded code")
end

function test_call_timeout()
  demo()
  local res, err = mcp_call("demo.sleep", {ms = 5000}, {timeout = 0.05})
  eq(res, nil, "res")
  eq(err.code, "INVOCATION_FAILED", "code")
  has(err.message, "timeout after 50ms", "message")
end

function test_invalid_use_raises()
  local ok, msg = pcall(mcp_add, "bad", {comand = {"x"}})
  eq(ok, false, "pcall ok")
  has(msg, 'INVALID_CONFIG: server "bad"', "message")
  has(msg, "comand", "message")
  eq(#mcp_servers(), 0, "#servers")
end

function test_status_and_servers()
  demo()
  demo("other")
  local st = mcp_status("demo")
  eq(st.name, "demo", "name")
  eq(st.state, "connected", "state")
  eq(st.transport, "stdio", "transport")
  eq(st.attempts, 0, "attempts")
  eq(st.last_error, nil, "last_error")
  eq(st.tools, 4, "tools")
  eq(st.server.name, "mcpvisor-demo", "server.name")
  eq(st.server.version, "0.1.0", "server.version")
  eq(type(st.protocol), "string", "protocol")
  local all = mcp_status()
  eq(all.other.state, "connected", "all.other.state")
  local names = mcp_servers()
  eq(#names, 2, "#names")
  eq(names[1] .. "," .. names[2], "demo,other", "names")
  local missing, err = mcp_status("nope")
  eq(missing, nil, "missing")
  eq(err.code, "SERVER_NOT_FOUND", "code")
end

function test_tools()
  demo()
  local tools = mcp_tools()
  eq(#tools, 4, "#tools")
  local echo = tools[2]
  eq(echo.name, "demo.echo", "name")
  eq(echo.server, "demo", "server")
  eq(echo.tool, "echo", "tool")
  eq(type(echo.description), "string", "description")
  eq(echo.input_schema.properties.text.type, "string", "schema")
  eq(#mcp_tools("demo"), 4, "#tools of demo")
end

function test_remove()
  demo()
  eq(mcp_remove("demo", {wait = true}), true, "remove")
  eq(mcp_status("demo"), nil, "status after remove")
  local ok, err = mcp_remove("demo")
  eq(ok, nil, "second remove")
  eq(err.code, "SERVER_NOT_FOUND", "code")
  local events = mcp_events(1)
  eq(events[1].kind, "removed", "last event")
  eq(events[1].server, "demo", "last event's server")
end

function test_wait_timeout_message()
  demo()
  local ok, why = mcp_wait("demo", "failed", 0.05)
  eq(ok, false, "ok")
  has(why, 'server "demo"', "why")
  has(why, "still connected", "why")
  ok, why = mcp_wait("nope", "connected", 0.05)
  eq(ok, false, "ok")
  has(why, "no such server", "why")
  eq(mcp_wait("demo", "connected", 0.05), true, "already there")
end

function test_events()
  demo()
  wait_event("connected", "demo")
  local evs = mcp_events()
  local kinds = {}
  for i, e in ipairs(evs) do
    if i > 1 then assert(e.seq > evs[i - 1].seq, "seq increases") end
    if e.server == "demo" then kinds[#kinds + 1] = e.kind end
  end
  eq(table.concat(kinds, " "), "added connecting connected", "kinds")
  eq(#mcp_events(2), 2, "#mcp_events(2)")
  eq(mcp_events(1)[1].kind, "connected", "latest")
  eq(mcp_events(1)[1].tools, 4, "connected.tools")
end

function test_sleep_and_arity()
  sleep(0.001)
  eq(select("#", sleep(0)), 0, "sleep returns nothing")
  demo()
  local a, b, c = mcp_call("demo.echo", {text = "x"})
  eq(a.text, "x", "a")
  eq(b, nil, "b")
  eq(c, nil, "c")
  local t = {mcp_call("demo.echo", {text = "x"})}
  eq(#t, 1, "#t")
  eq(select("#", mcp_call("demo.nope", {})), 2, "values on failure")
end

function test_json_roundtrip()
  local src = '{"a":[1,null,{"b":true}],"c":"d","e":{},"f":[]}'
  local v = json.decode(src)
  eq(#v.a, 3, "#a")
  eq(v.a[2], json.null, "null in an array")
  eq(v.c, "d", "c")
  eq(json.encode(v), src, "roundtrip")
  eq(json.encode({}), "{}", "empty table")
  eq(json.encode(setmetatable({}, json.array_mt)), "[]", "array_mt")
end

function test_globals()
  eq(MCPVISOR, "/bin/mcpvisor-test", "MCPVISOR")
  eq(io, nil, "io")
  for _, f in ipairs({os.exit, dofile, loadfile, load}) do
    local ok, err = pcall(f)
    assert(not ok and err:find("not available in mcpvisor's Lua sandbox"), err)
  end
  eq(mcp.call, mcp_call, "mcp.call")
end

function test_guard_in_pcall()
  demo()
  local ok, err = pcall(function() local r = mcp_call("demo.echo", {text = "x"}) return r end)
  eq(ok, false, "ok")
  has(err, "mcp_call cannot run inside pcall", "err")
  -- The task itself still suspends fine afterwards.
  eq(mcp_call("demo.echo", {text = "after"}).text, "after", "after")
end
