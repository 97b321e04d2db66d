package luaapi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/luaapi"
	"github.com/mcpvisor/mcpvisor/manager"
)

// cannedCalls answers every tool call at once with the same result, so
// that what is measured is the Lua side of a call alone.
type cannedCalls struct {
	luaapi.Manager
	res *mcp.CallToolResult
}

func (c cannedCalls) Call(context.Context, string, any, manager.CallOptions) (*mcp.CallToolResult, error) {
	return c.res, nil
}

// BenchmarkRunLuaCallVsMcpCall is the cost of a tool call made inside a
// run_lua chunk against the same call made by mcp_call from a chunk of
// the control plane, both through the same manager. Each iteration runs,
// interleaved, a run_lua chunk making callsPerChunk calls of demo.echo, an
// Exec'd chunk making as many with mcp_call, and, for each path, the same
// chunk with no call (its fixed cost). Per inner call is (chunk − empty
// chunk) / callsPerChunk, from the medians:
//
//   - run-lua-call-µs, mcp-call-µs: a call on each path;
//   - ratio: run_lua's over mcp_call's (target ≤ 1.2);
//   - run-lua-fixed-µs: what a run costs besides its calls (the fresh
//     sandbox, compiling, the watchdog).
//
// Sub-benchmarks: "demo", the in-memory demo server behind the manager
// (both paths pay the SDK's round trip), and "canned", a manager that
// answers at once (what each path adds itself).
func BenchmarkRunLuaCallVsMcpCall(b *testing.B) {
	canned := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}
	b.Run("demo", func(b *testing.B) { benchRunLuaVsMcpCall(b, nil) })
	b.Run("canned", func(b *testing.B) { benchRunLuaVsMcpCall(b, canned) })
}

const callsPerChunk = 100

func benchRunLuaVsMcpCall(b *testing.B, canned *mcp.CallToolResult) {
	var opts []func(*luaapi.Options)
	if canned != nil {
		opts = append(opts, func(o *luaapi.Options) { o.Manager = cannedCalls{Manager: o.Manager, res: canned} })
	}
	r := newTestRuntime(b, nil, opts...)
	r.addDemo(b, "demo")
	ctx := context.Background()
	var toolbox luaapi.Toolbox = r.m
	if canned != nil {
		toolbox = cannedCalls{res: canned}
	}
	env := luaapi.ChunkEnv{
		Tools: []luaapi.ChunkTool{{Name: "demo__echo", Server: "demo", Tool: "echo"}},
		Call: func(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
			return toolbox.Call(ctx, "demo.echo", args, manager.CallOptions{})
		},
	}
	// A CPU budget no run reaches: it is wall time, and the machine may be
	// loaded.
	limits := luaapi.ChunkLimits{MaxCalls: callsPerChunk, SliceBudget: time.Minute}
	loop := func(call string) string {
		return fmt.Sprintf(`for i = 1, %d do %s end`, callsPerChunk, call)
	}
	runLua := func(code string) time.Duration {
		start := time.Now()
		res, err := luaapi.RunChunk(ctx, code, env, limits)
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatal(err, res.Content[0].(*mcp.TextContent).Text)
		}
		return d
	}
	exec := func(code string) time.Duration {
		start := time.Now()
		if _, err := r.Exec(ctx, code, "bench"); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var (
		luaCalls   = loop(`tools.demo.echo{text = "x"}`)
		luaEmpty   = loop(`local _ = {text = "x"}`)
		mcpCalls   = loop(`local res, err = mcp_call("demo.echo", {text = "x"}) if not res then error(tostring(err)) end`)
		mcpEmpty   = loop(`local _ = {text = "x"}`)
		runs, runE []time.Duration
		mcps, mcpE []time.Duration
	)
	for range 20 { // warm up both paths
		runLua(luaCalls)
		exec(mcpCalls)
	}
	b.ResetTimer()
	for range b.N {
		runs = append(runs, runLua(luaCalls))
		mcps = append(mcps, exec(mcpCalls))
		runE = append(runE, runLua(luaEmpty))
		mcpE = append(mcpE, exec(mcpEmpty))
	}
	b.StopTimer()
	perCall := func(full, empty []time.Duration) float64 {
		return float64((median(full) - median(empty)).Nanoseconds()) / callsPerChunk / 1e3
	}
	runLuaCall, mcpCall := perCall(runs, runE), perCall(mcps, mcpE)
	b.ReportMetric(runLuaCall, "run-lua-call-µs")
	b.ReportMetric(mcpCall, "mcp-call-µs")
	b.ReportMetric(runLuaCall/mcpCall, "ratio")
	b.ReportMetric(float64(median(runE).Nanoseconds())/1e3, "run-lua-fixed-µs")
}
