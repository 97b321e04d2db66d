package luaapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// disabledServers is a config declaring n disabled servers, one mcp_add
// line each (literal) or from a loop: applying it spawns nothing, so what
// it measures is the host's own work per server. The loop keeps the Lua
// compiler out of the figure: gopher-lua looks each new constant up among
// the chunk's constants one by one, which makes compiling n literal names
// cost n² (about 0.1 s at 4000).
func disabledServers(n int, literal bool) string {
	if !literal {
		return fmt.Sprintf("for i = 1, %d do mcp_add(string.format(\"s%%05d\", i), {command = {\"server\"}, enabled = false}) end\n", n)
	}
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "mcp_add(\"s%05d\", {command = {\"server\"}, enabled = false})\n", i)
	}
	return b.String()
}

// applyTime is how long a fresh runtime takes to load a config of n
// disabled servers: evaluation and application together.
func applyTime(b *testing.B, n int, literal bool) time.Duration {
	b.Helper()
	r := newTestRuntime(b, nil)
	src := disabledServers(n, literal)
	start := time.Now()
	res, err := r.LoadConfigSource(context.Background(), "/config/startup.lua", src)
	elapsed := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Added) != n {
		b.Fatalf("%d servers added, want %d", len(res.Added), n)
	}
	return elapsed
}

// BenchmarkApplyLinear loads configs of 1000 and 4000 disabled servers into
// fresh runtimes, the servers declared by a loop ("loop") or one line each
// ("literal"). Applying a config must cost the same per server however many
// there are: ratio-4k/1k is the time of 4000 over that of 1000, about 4
// when linear (it was ~14 when apply asked the manager about each new
// server, an answer that went over all of them).
func BenchmarkApplyLinear(b *testing.B) {
	for _, literal := range []bool{false, true} {
		b.Run(map[bool]string{false: "loop", true: "literal"}[literal], func(b *testing.B) {
			var small, large time.Duration
			for range b.N {
				small += applyTime(b, 1000, literal)
				large += applyTime(b, 4000, literal)
			}
			b.ReportMetric(float64(small.Microseconds())/1e3/float64(b.N), "ms-1k")
			b.ReportMetric(float64(large.Microseconds())/1e3/float64(b.N), "ms-4k")
			b.ReportMetric(float64(large)/float64(small), "ratio-4k/1k")
		})
	}
}
