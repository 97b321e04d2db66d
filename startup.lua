-- startup.lua — the servers mcpvisor keeps connected.
--
-- mcpvisor runs this file at start. Each mcp_add declares a server and
-- returns at once; mcpvisor connects in the background, reconnects when a
-- server drops, and lists its tools as "<server>.<tool>".
--
-- Try it:  mcp_status()   mcp_tools()   mcp_call("demo.echo", {text = "hi"})

-- The built-in demo server (no Node or network needed). MCPVISOR is the path
-- of the running mcpvisor binary.
mcp_add("demo", {command = {MCPVISOR, "demo-server"}})

-- A stdio server from npm (needs Node): the reference "everything" server.
-- mcp_add("everything", {
--   command = {"npx", "-y", "@modelcontextprotocol/server-everything", "stdio"},
--   env = {LOG_LEVEL = "info"},
-- })

-- A streamable HTTP server. ${VAR} is taken from the environment.
-- mcp_add("remote", {
--   url = "http://127.0.0.1:3001/mcp",
--   headers = {Authorization = "Bearer ${REMOTE_TOKEN}"},
-- })

-- A legacy HTTP+SSE server.
-- mcp_add("legacy", {url = "http://127.0.0.1:3001/sse", transport = "sse"})

-- Tuning (all optional): timeouts and the reconnect schedule.
-- mcp_add("slow", {
--   command = {"my-server"},
--   timeouts = {connect = "2m", request = "5m"},
--   backoff = {initial = "1s", max = "60s"},
--   max_retries = 10,
-- })
