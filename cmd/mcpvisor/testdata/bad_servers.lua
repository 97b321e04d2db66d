-- Servers that never come up must not delay the one that does.
-- A program that does not exist: every attempt fails at spawn. The long
-- backoff keeps it in backoff (not already retrying) when the test looks.
mcp_add("bad", {
  command = {"/nonexistent/mcpvisor-e2e/no-such-server", "--stdio"},
  backoff = {initial = "1m", max = "1m"},
})
-- A program that runs but never answers the handshake (it exits when its
-- stdin closes, so shutdown stays quick).
mcp_add("mute", {command = {"sh", "-c", "cat > /dev/null"}})
mcp_add("demo", {command = {MCPVISOR, "demo-server"}})
