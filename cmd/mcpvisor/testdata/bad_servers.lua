-- Servers that never come up must not delay the one that does.
-- A program that does not exist: its first attempt fails at spawn, and it
-- is failed (not retried) with the reason.
mcp_add("bad", {command = {"/nonexistent/mcpvisor-e2e/no-such-server", "--stdio"}})
-- A program that runs but never answers the handshake (it exits when its
-- stdin closes, so shutdown stays quick). Its attempt would last an hour: a
-- run that ends at all did not wait for it.
mcp_add("mute", {command = {"sh", "-c", "cat > /dev/null"}, timeouts = {connect = "1h"}})
mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
