-- A config that fails while running, on line 3.
mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
error("boom in config")
