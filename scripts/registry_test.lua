-- registry_test.lua — discovery, names, validated calls, resources and
-- prompts, tested from Lua.
--
-- TestLuaScripts (luaapi/scripts_test.go) runs each global test_* function
-- in a fresh runtime in which every server is the in-memory demo server:
--
--   go test ./luaapi -run TestLuaScripts/test_discover_cached

local lib = require("testlib")
local demo, eq, has = lib.demo, lib.eq, lib.has

local function names(list)
  local out = {}
  for _, item in ipairs(list) do out[#out + 1] = item.name end
  return table.concat(out, " ")
end

-- expect_error asserts that a call returned nil, err with err.code == code
-- and returns err.
local function expect_error(code, res, err)
  eq(res, nil, "result")
  assert(type(err) == "table", "no error table")
  eq(err.code, code, "code (" .. tostring(err.message) .. ")")
  assert(err.operation, "the error names its operation")
  eq(tostring(err), err.code .. ": " .. err.message, "tostring")
  return err
end

-- ---- discovery: cached, refreshed on force ----

function test_tools_available()
  demo()
  local tools = mcp_tools()
  eq(names(tools), "demo.add demo.echo demo.fail demo.sleep", "names")
  for _, t in ipairs(tools) do
    eq(t.available, true, t.name .. ".available")
    eq(t.server, "demo", t.name .. ".server")
  end
end

function test_discover_cached()
  demo()
  eq(select("#", mcp_discover()), 2, "mcp_discover returns tools, errors")
  local first, errs = mcp_discover()
  eq(next(errs), nil, "no errors")
  local second = mcp_discover("demo")
  eq(names(second), names(first), "discovering twice gives the same tools")
  eq(names(first), names(mcp_tools()), "the same as mcp_tools()")
  eq(first[2].input_schema.properties.text.type, "string", "schemas come along")
end

function test_discover_forced()
  demo()
  demo("other")
  local cached = mcp_discover()
  local forced, errs = mcp_discover({force = true})
  eq(next(errs), nil, "no errors")
  eq(names(forced), names(cached), "force returns the same set for unchanged servers")
  eq(#forced, 8, "#forced")
  local one, errs2 = mcp_discover("other", {force = true})
  eq(next(errs2), nil, "no errors")
  eq(names(one), "other.add other.echo other.fail other.sleep", "one server")
  eq(mcp.discover, mcp_discover, "module alias")
end

function test_discover_unknown_server()
  demo()
  local err = expect_error("SERVER_NOT_FOUND", mcp_discover("dmeo", {force = true}))
  eq(err.operation, "discover", "operation")
  has(err.message, 'did you mean "demo"?', "message")
end

-- ---- names: server.tool, or a bare name when unique ----

function test_same_tool_on_two_servers()
  demo("a")
  demo("b")
  local err = expect_error("AMBIGUOUS_TOOL", mcp_call("echo", {text = "x"}))
  has(err.message, "call one of: a.echo, b.echo", "message")
  eq(mcp_call("a.echo", {text = "from a"}).text, "from a", "a.echo")
  eq(mcp_call("b.echo", {text = "from b"}).text, "from b", "b.echo")
  mcp_remove("a", {wait = true})
  eq(mcp_call("echo", {text = "only b"}).text, "only b", "unique again after remove")
  eq(names(mcp_tools()), "b.add b.echo b.fail b.sleep", "a's tools are gone")
end

function test_unknown_tool_suggests()
  demo()
  local err = expect_error("TOOL_NOT_FOUND", mcp_call("ecoh", {text = "x"}))
  has(err.message, 'did you mean "demo.echo"?', "message")
  err = expect_error("TOOL_NOT_FOUND", mcp_call("demo.ecoh", {text = "x"}))
  eq(err.server, "demo", "server")
  has(err.message, 'did you mean "echo"?', "message")
end

-- ---- calls checked against the tool's inputSchema ----

function test_invalid_arguments()
  demo()
  local cases = {
    {{a = "two", b = 1}, '$.a: must be integer, got string "two"'},
    {{a = 1}, "$.b: required property is missing"},
    {{a = 1.5, b = 1}, "$.a: must be integer, got number 1.5"},
    {{a = 1, bb = 2}, '$.bb: unexpected property; did you mean "b"?'},
    {{}, "$.a: required property is missing; $.b: required property is missing"},
  }
  for i, c in ipairs(cases) do
    local err = expect_error("INVALID_ARGUMENTS", mcp_call("demo.add", c[1]))
    eq(err.server, "demo", "server of case " .. i)
    eq(err.operation, 'tools/call "add"', "operation of case " .. i)
    has(err.message, c[2], "message of case " .. i)
  end
end

function test_valid_arguments_pass()
  demo()
  eq(mcp_call("demo.add", {a = 2.0, b = 40}).structured.sum, 42, "integral numbers are integers")
  eq(mcp_call("demo.add", {a = 10 / 5, b = -2}).structured.sum, 0, "computed integers too")
end

function test_tool_error_keeps_content()
  demo()
  local res, err = mcp_call("demo.fail", {message = "partial output"})
  eq(err, nil, "a tool error is a result")
  eq(res.is_error, true, "is_error")
  eq(res.text, "partial output", "content kept")
end

-- ---- resources ----

function test_resources()
  demo()
  local list = mcp_resources()
  eq(#list, 1, "#resources")
  local r = list[1]
  eq(r.uri, "demo://readme", "uri")
  eq(r.server, "demo", "server")
  eq(r.name, "readme", "name")
  eq(r.mime_type, "text/plain", "mime_type")
  eq(r.template, false, "template")
  eq(r.available, true, "available")
  eq(#mcp_resources("demo"), 1, "by server")
  expect_error("SERVER_NOT_FOUND", mcp_resources("nope"))
end

function test_read()
  demo()
  local res = mcp_read("demo://readme")
  has(res.text, "mcpvisor demo server", "text")
  eq(res.contents[1].uri, "demo://readme", "contents[1].uri")
  eq(mcp_read("demo://readme", {server = "demo"}).text, res.text, "with server")
  eq(mcp.read, mcp_read, "module alias")
end

function test_read_unknown_uri()
  demo()
  local err = expect_error("SERVER_NOT_FOUND", mcp_read("demo://nope"))
  has(err.message, "no server lists this resource", "message")
  has(err.message, "{server = name}", "message suggests the option")
  err = expect_error("INVOCATION_FAILED", mcp_read("demo://nope", {server = "demo"}))
  eq(err.server, "demo", "server")
  expect_error("SERVER_NOT_FOUND", mcp_read("demo://readme", {server = "nope"}))
end

function test_read_listed_twice()
  demo("a")
  demo("b")
  local err = expect_error("AMBIGUOUS_TOOL", mcp_read("demo://readme"))
  has(err.message, "a, b", "message names the servers")
  has(mcp_read("demo://readme", {server = "b"}).text, "demo server", "with server")
end

-- ---- prompts ----

function test_prompts()
  demo()
  local list = mcp_prompts()
  eq(#list, 1, "#prompts")
  local p = list[1]
  eq(p.name, "demo.greet", "name")
  eq(p.server, "demo", "server")
  eq(p.prompt, "greet", "prompt")
  eq(p.available, true, "available")
  eq(#p.arguments, 1, "#arguments")
  eq(p.arguments[1].name, "name", "argument name")
  eq(p.arguments[1].required, true, "argument required")
  eq(#mcp_prompts("demo"), 1, "by server")
  expect_error("SERVER_NOT_FOUND", mcp_prompts("nope"))
end

function test_prompt()
  demo()
  local res = mcp_prompt("demo.greet", {name = "Ada"})
  eq(res.text, "Say hello to Ada.", "text")
  eq(res.description, "Greet Ada", "description")
  eq(res.messages[1].role, "user", "role")
  eq(mcp.prompt, mcp_prompt, "module alias")
end

function test_prompt_unknown()
  demo()
  local err = expect_error("PROMPT_NOT_FOUND", mcp_prompt("demo.great", {name = "x"}))
  eq(err.server, "demo", "server")
  has(err.message, "its prompts: greet", "message lists the prompts")
  err = expect_error("PROMPT_NOT_FOUND", mcp_prompt("greet", {name = "x"}))
  has(err.message, 'prompt names are "server.prompt"', "message")
  expect_error("SERVER_NOT_FOUND", mcp_prompt("nope.greet", {name = "x"}))
  err = expect_error("INVOCATION_FAILED", mcp_prompt("demo.greet", {}))
  has(err.message, 'argument "name" is required', "the server's error is kept")
end
