// Package expose holds the gateway's naming rules: which characters an
// MCP client accepts in a tool name ([Rune], [ValidName]), and how a
// declared server's tools are offered to clients ([Rules]: a prefix,
// hidden tools, renames).
//
// The rules are the gateway's; they live here, apart from it, because a
// server's declaration carries its Rules (the manager keeps and validates
// them with the rest of the declaration, and otherwise ignores them) and
// the Lua runtime checks the names of the tools and toolsets it serves
// against the same alphabet. The package imports nothing of mcpvisor's.
//
// Everything here is a pure function of its arguments, safe for
// concurrent use.
package expose
