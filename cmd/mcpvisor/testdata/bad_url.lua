-- A url without its scheme, as people paste it.
mcp_add("web", {url = "127.0.0.1:9/mcp"})
