package luaapi_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpvisor/mcpvisor/manager"
)

// BenchmarkMcpAddWhileConnecting declares a new server per iteration while
// every server's dial blocks until the benchmark ends, so all of them stay
// connecting: mcp_add records intent and returns without waiting for any
// connection. ns/op is the mean time of one Exec of a small chunk calling
// mcp_add. Each iteration also Execs an (almost) empty chunk, interleaved so
// both see the same GC and scheduler weather; add/empty-chunk is the ratio
// of their medians, i.e. what mcp_add adds to running any chunk.
func BenchmarkMcpAddWhileConnecting(b *testing.B) {
	gate := make(chan struct{})
	dial := func(ctx context.Context, _ string, _ manager.Spec) (mcp.Transport, error) {
		select {
		case <-gate: // the benchmark is over
		case <-ctx.Done(): // removed by the manager's Close
		}
		return nil, errors.New("benchmark over")
	}
	r := newTestRuntime(b, dial)
	b.Cleanup(func() { close(gate) }) // runs before the runtime's cleanup
	ctx := context.Background()
	exec := func(src string) time.Duration {
		start := time.Now()
		if _, err := r.Exec(ctx, src, "bench"); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	exec(`n = 0`)
	const (
		empty = `n = n`
		add   = `n = n + 1 mcp_add("s" .. n, {command = {"x"}})`
	)
	for range 100 { // warm up the loop and the allocator
		exec(empty)
	}

	emptyTimes := make([]time.Duration, 0, b.N)
	addTimes := make([]time.Duration, 0, b.N)
	var addTotal time.Duration
	b.ResetTimer()
	for range b.N {
		emptyTimes = append(emptyTimes, exec(empty))
		d := exec(add)
		addTimes = append(addTimes, d)
		addTotal += d
	}
	b.StopTimer()
	b.ReportMetric(float64(addTotal.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(median(addTimes))/float64(median(emptyTimes)), "add/empty-chunk")

	// Every server was declared and none has connected: mcp_add did not wait.
	res, err := r.Exec(ctx, `
		local connecting = 0
		for _, st in pairs(mcp_status()) do
			if st.state == "connecting" then connecting = connecting + 1 end
		end
		return #mcp_servers(), connecting`, "check")
	if err != nil {
		b.Fatal(err)
	}
	want := strconv.Itoa(b.N)
	if len(res.Values) != 2 || res.Values[0] != want || res.Values[1] != want {
		b.Fatalf("servers, connecting = %q, want %s of each", res.Values, want)
	}
}

// BenchmarkMcpCallVsManager compares mcp_call through Exec with
// manager.Call directly, both against the in-memory demo echo tool and
// interleaved per iteration. ns/op is the mean of the Lua path;
// lua-call-overhead-µs is the difference of the two paths' medians (chunk
// compile, task, loop hand-offs, conversions); manager-call-µs is the
// direct path's median. Both paths are dominated by the SDK's JSON
// handling and its GC, hence medians.
func BenchmarkMcpCallVsManager(b *testing.B) {
	r := newTestRuntime(b, nil)
	r.addDemo(b, "demo")
	ctx := context.Background()
	args := map[string]any{"text": "hi"}
	direct := func() time.Duration {
		start := time.Now()
		res, err := r.m.Call(ctx, "demo.echo", args, manager.CallOptions{})
		d := time.Since(start)
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
		return d
	}
	const src = `return mcp_call("demo.echo", {text = "hi"}).text`
	viaLua := func() time.Duration {
		start := time.Now()
		res, err := r.Exec(ctx, src, "bench")
		d := time.Since(start)
		if err != nil || len(res.Values) != 1 || res.Values[0] != "hi" {
			b.Fatal(err, res.Values)
		}
		return d
	}
	for range 100 { // warm up both paths
		direct()
		viaLua()
	}

	directTimes := make([]time.Duration, 0, b.N)
	luaTimes := make([]time.Duration, 0, b.N)
	var luaTotal time.Duration
	b.ResetTimer()
	for range b.N {
		directTimes = append(directTimes, direct())
		d := viaLua()
		luaTimes = append(luaTimes, d)
		luaTotal += d
	}
	b.StopTimer()
	b.ReportMetric(float64(luaTotal.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(median(directTimes).Nanoseconds())/1e3, "manager-call-µs")
	b.ReportMetric(float64((median(luaTimes)-median(directTimes)).Nanoseconds())/1e3, "lua-call-overhead-µs")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
