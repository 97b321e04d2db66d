-- A config with a syntax error on line 4. Lua compiles the whole file
-- before running any of it, so neither server may be added.
mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
local x = = 1
mcp_add("after", {command = {MCPVISOR, "demo-server"}})
