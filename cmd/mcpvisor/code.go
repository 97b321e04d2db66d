package main

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/luaapi"
)

// runLua returns what runs a gateway client's run_lua chunk, within
// limits, in a fresh Lua sandbox of its own: the gateway says what the
// client may call, and how; luaapi runs the chunk. The two packages do not
// know each other, so their descriptions of a tool are copied across here.
func runLua(limits luaapi.ChunkLimits) func(ctx context.Context, code string, env gateway.CodeEnv) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, code string, env gateway.CodeEnv) (*mcp.CallToolResult, error) {
		return runCodeChunk(ctx, code, env, limits)
	}
}

func runCodeChunk(ctx context.Context, code string, env gateway.CodeEnv, limits luaapi.ChunkLimits) (*mcp.CallToolResult, error) {
	tools := make([]luaapi.ChunkTool, len(env.Tools))
	for i, t := range env.Tools {
		tools[i] = luaapi.ChunkTool{Name: t.Name, Server: t.Server, Tool: t.Tool, Description: t.Description, InputSchema: t.InputSchema}
	}
	chunk := luaapi.ChunkEnv{Tools: tools, Call: env.Call}
	if env.Search != nil {
		chunk.Search = func(query string, limit int, server string) []luaapi.ChunkHit {
			hits := env.Search(query, limit, server)
			out := make([]luaapi.ChunkHit, len(hits))
			for i, h := range hits {
				out[i] = luaapi.ChunkHit{Name: h.Name, Server: h.Server, Description: h.Description, Why: h.Why}
			}
			return out
		}
	}
	return luaapi.RunChunk(ctx, code, chunk, limits)
}
