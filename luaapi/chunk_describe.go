package luaapi

import (
	"fmt"
	"strings"
)

// RunLuaDescription is a description of the tool that takes chunks for
// RunChunk (the code mode's run_lua): what a chunk can call and how to
// find tools from Lua, the limits of a run, and the servers of tools
// with how many tools each has. It names no tool, so it stays short
// however many tools there are.
func RunLuaDescription(tools []ChunkTool, limits ChunkLimits) string {
	limits = limits.withDefaults()
	var servers []string
	count := map[string]int{}
	for _, t := range tools {
		if count[t.Server] == 0 {
			servers = append(servers, t.Server)
		}
		count[t.Server]++
	}
	var b strings.Builder
	b.WriteString("Run a Lua chunk that calls tools and composes their results in one step; prefer it to several separate calls. ")
	b.WriteString("Each tool is a function: tools.<server>.<tool>{arg = value} returns the tool's structured result as a table, or else its text, and raises an error when the tool fails (pcall catches it). ")
	b.WriteString("search_tools(query[, limit[, server]]) finds tools ({name, server, tool, description, why}); describe(\"server.tool\") gives one's input_schema; pairs(tools.<server>) lists a server's tools. ")
	b.WriteString("print(...) and the returned value (tables as JSON) come back as the result: return what is needed, not whole listings. json.encode/json.decode are there; io, os and require are not. ")
	calls := fmt.Sprintf("%d tool calls", limits.MaxCalls)
	if limits.MaxCalls < 0 {
		calls = "any number of tool calls"
	}
	fmt.Fprintf(&b, "Limits per run: %s, %s, %s of Lua between two calls, %d bytes of output.",
		calls, limits.Timeout, limits.SliceBudget, limits.MaxOutput)
	if len(servers) == 0 {
		b.WriteString(" No tools are available now.")
		return b.String()
	}
	b.WriteString(" Servers:")
	for i, s := range servers {
		sep := ","
		if i == 0 {
			sep = ""
		}
		noun := "tools"
		if count[s] == 1 {
			noun = "tool"
		}
		fmt.Fprintf(&b, "%s %s (%d %s)", sep, s, count[s], noun)
	}
	b.WriteString(".")
	return b.String()
}
