-- A server that ignores stdin EOF and SIGTERM, so that a graceful shutdown
-- takes the whole stop grace (stdin close, wait, SIGTERM, wait, SIGKILL).
-- It writes its pid to $STUBBORN_PIDFILE first, for the test's cleanup.
mcp_add("stubborn", {command = {"sh", "-c", "echo $$ > \"$STUBBORN_PIDFILE\"; trap '' TERM; exec sleep 300"}})
